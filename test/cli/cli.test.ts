// The `user-groups` command as a GitOps pipeline runs it: preview on a pull
// request, up on merge, a scheduled drift check, against the fake server.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { story } from "../support/story";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const CUSTOMER_KEY = "cli-customer-key-000000001";
const TESTING_KEY = "cli-testing-key-0000000002";

const { server, env, envVars } = useStackFixture({ label: "cli", apiKeys: [CUSTOMER_KEY, { key: TESTING_KEY, environment: "Testing" }] });
let groupsFile: string;
const printed: string[] = [];

function cli(...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: {
      ...process.env,
      ...envVars({ PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL_TESTING: server.url, USER_GROUPS_API_KEY_TESTING: TESTING_KEY }),
    },
  });
}

async function cliPrinted(...args: string[]): Promise<CliRun> {
  const result = await cli(...args);
  printed.push(result.stdout, result.stderr);
  return result;
}

function writeGroups(content: string, file = groupsFile): void {
  writeFileSync(file, content);
}

const GROUPS = `# groups of the embedded dashboards
groups:
  - name: Acme Corp
    userGroupId: acme
    mapping: { sales: warehouse-eu }
    properties: { region: eu, seats: 40 }
  - name: Globex
    userGroupId: globex
  - name: Acme (test)
    userGroupId: acme
    profile: testing
`;

beforeAll(async () => {
  groupsFile = path.join(env.workDir, "groups.yaml");
  writeGroups(GROUPS);
});

// What each test's runs printed is scanned right after it (a token or key found fails that test): no test relies
// on the others' output, and a test that printed nothing has nothing to prove here.
afterEach(() => {
  const all = printed.splice(0).join("\n");
  for (const secret of [CUSTOMER_KEY, TESTING_KEY]) expect(all).not.toContain(secret);
  expect(all).not.toMatch(/\b[0-9a-f]{64}\b/);
});

// The steps below take one stack through its life, each from where the last left it (the refusals and the JSON
// file, plain tests, stand alone).
const step = story();

describe("user-groups CLI", () => {
  // One preview shows both (an engine run); a preview with changes and no --expect-no-changes exits 0:
  // plan-messages.test.ts and the gitops example's pull-request job.
  step("previews the file on a pull request and reports changes to --expect-no-changes", async () => {
    const preview = await cliPrinted("preview", "--file", groupsFile, "--expect-no-changes");
    expect(preview.code, preview.stderr).toBe(3);
    expect(preview.stdout).toMatch(/\+ default\.acme\s+default\s+create/);
    expect(preview.stdout).toMatch(/\+ testing\.acme\s+testing\s+create/);
    expect(preview.stdout).toMatch(/3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged/);
    expect(server.groups()).toEqual([]);
  });

  step("refuses up without --yes when nobody can confirm", async () => {
    const refused = await cliPrinted("up", "--file", groupsFile);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to up without --yes/);
    expect(server.groups()).toEqual([]);
  });

  step("applies on merge, with progress lines and a table, never a token", async () => {
    const up = await cliPrinted("up", "--file", groupsFile, "--yes");
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).toMatch(/\+ default\.globex: create done/);
    expect(up.stdout).toMatch(/default\.acme\s+default\s+Customer\s+create\s+\d+/);
    expect(up.stdout).toMatch(/testing\.acme\s+testing\s+Testing\s+create/);
    expect(server.groups().map((g) => `${g.environment}/${g.user_group_id}`).sort()).toEqual(["Customer/acme", "Customer/globex", "Testing/acme"]);
    const check = await cliPrinted("preview", "--file", groupsFile, "--expect-no-changes");
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  step("prints one JSON document, with tokens only when asked", async () => {
    writeGroups(GROUPS.replace("name: Globex", "name: Globex Corporation"));
    const preview = await cliPrinted("preview", "--file", groupsFile, "--json");
    expect(preview.code).toBe(0);
    const doc = JSON.parse(preview.stdout) as { summary: Record<string, number>; changed: boolean };
    expect(doc).toMatchObject({ schemaVersion: 1, changed: true, summary: { update: 1, create: 0 } });

    const up = await cli("up", "--file", groupsFile, "--yes", "--json", "--show-secrets");
    expect(up.code, up.stderr).toBe(0);
    const result = JSON.parse(up.stdout) as { groups: Array<{ resourceName: string; token?: string; change: string }> };
    const tokens = Object.fromEntries(result.groups.map((g) => [g.resourceName, g.token]));
    expect(tokens["default.globex"]).toBe(server.groups().find((g) => g.user_group_id === "globex")?.token);
    expect(result.groups.find((g) => g.resourceName === "default.globex")?.change).toBe("update");
    expect(server.groups().find((g) => g.user_group_id === "globex")?.name).toBe("Globex Corporation");

    const quiet = await cliPrinted("refresh", "--file", groupsFile, "--json");
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).not.toMatch(/"token"/);
  });

  step("detects drift on a schedule, and refresh + up heal an out-of-band delete", async () => {
    const victim = server.groups().find((g) => g.user_group_id === "globex")!;
    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: CUSTOMER_KEY });
    await operator.delete({ current_token: victim.token });
    await operator.close();

    const drift = await cliPrinted("refresh", "--file", groupsFile, "--expect-no-changes");
    expect(drift.code).toBe(3);
    expect(drift.stdout).toMatch(/default\.globex\s+default\s+\S*\s*delete/);
    expect(server.groups().some((g) => g.user_group_id === "globex")).toBe(false);

    const heal = await cliPrinted("up", "--file", groupsFile, "--yes");
    expect(heal.code, heal.stderr).toBe(0);
    expect(server.groups().filter((g) => g.user_group_id === "globex")).toHaveLength(1);
    expect((await cliPrinted("refresh", "--file", groupsFile, "--expect-no-changes")).code).toBe(0);
  });

  // Each kind of bad file and its message: groups-file-refusals.unit.test.ts (the reader up uses); here the
  // command with one of them (two problems in one entry): exit 2, both named, nothing sent.
  it.each([
    ["a bad field", "groups:\n  - { name: A, userGroupId: a }\n  - { name: '  ', userGroupId: b, color: red }\n", /groups\[1\] \(userGroupId "b"\): name must not be blank[\s\S]*the group has an unknown key "color"/],
  ])("refuses %s before any change, naming the file and the entry", async (_what, content, message) => {
    const bad = path.join(env.workDir, "bad.yaml");
    writeGroups(content, bad);
    const before = server.journal().length;
    const run = await cliPrinted("up", "--file", bad, "--yes");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(bad);
    expect(run.stderr).toMatch(message);
    expect(server.journal().length).toBe(before);
  });

  it("accepts a JSON groups file (a stack of its own)", async () => {
    const json = path.join(env.workDir, "groups.json");
    writeFileSync(json, JSON.stringify({ groups: [{ name: "A", userGroupId: "a" }] }));
    const run = await cliPrinted("preview", "--file", json, "--stack", "json");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/1 to create/);
  });

  step("refuses a second concurrent run of one stack from another process, and the state stays sound", async () => {
    writeGroups(GROUPS.replace("seats: 40", "seats: 41"));
    const [first, second] = await Promise.all([cliPrinted("up", "--file", groupsFile, "--yes"), cliPrinted("up", "--file", groupsFile, "--yes")]);
    const codes = [first.code, second.code].sort();
    expect(codes, first.stderr + second.stderr).toEqual([0, 1]);
    const loser = first.code === 1 ? first : second;
    expect(loser.stderr).toMatch(/Stack "default" is locked: another run on it is in progress/);
    // Which run, since when, and that it is alive (same host).
    expect(loser.stderr).toMatch(/pid \d+ on host "[^"]+" \(since \d{4}-[^)]+\) holds the lock and is still running/);
    expect(server.groups().find((g) => g.user_group_id === "acme" && g.environment === "Customer")?.properties).toEqual({ region: "eu", seats: 41 });
    expect((await cliPrinted("preview", "--file", groupsFile, "--expect-no-changes")).code).toBe(0);
  });

  step("with --lock-timeout, a second concurrent run waits for the first instead of failing", async () => {
    writeGroups(GROUPS.replace("seats: 40", "seats: 42"));
    const [first, second] = await Promise.all([
      cliPrinted("up", "--file", groupsFile, "--yes", "--lock-timeout", "5m"),
      cliPrinted("up", "--file", groupsFile, "--yes", "--lock-timeout", "5m"),
    ]);
    expect([first.code, second.code], first.stderr + second.stderr).toEqual([0, 0]);
    expect(first.stderr + second.stderr).toMatch(/stack "default" is locked by another run; waiting up to 5 min/);
    expect(server.groups().find((g) => g.user_group_id === "acme" && g.environment === "Customer")?.properties).toEqual({ region: "eu", seats: 42 });
  });

  step("destroys every group of the stack", async () => {
    const destroy = await cliPrinted("destroy", "--file", groupsFile, "--yes");
    expect(destroy.code, destroy.stderr).toBe(0);
    expect(server.groups()).toEqual([]);
  });
});
