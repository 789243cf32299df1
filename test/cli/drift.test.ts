// Drift checks and refreshes that change nothing they should not (R5), run
// through the `user-groups` command as a scheduled CI job runs it: reads only
// on the service (the fake server's journal), the state byte for byte as it
// was, a read-only key enough; no groups file needed once the stack exists;
// a lock whose run is gone named as such.
import { spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { afterEach, beforeAll, describe, expect } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { story } from "../support/story";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const RW_KEY = "drift-test-key-read-write-0001";
const RO_KEY = "drift-test-key-read-only-00002";

const { server, env, envVars } = useStackFixture({
  label: "drift",
  apiKeys: [RW_KEY, { key: RO_KEY, environment: "Customer", readOnly: true }],
});
let groupsFile: string;
const printed: string[] = [];

async function cli(apiKey: string, ...args: string[]): Promise<CliRun> {
  const run = await runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...envVars({ GITHUB_STEP_SUMMARY: "", USER_GROUPS_API_KEY: apiKey }) },
  });
  printed.push(run.stdout, run.stderr);
  return run;
}

/** Every file of the backend, with its content: the state, history, backups, locks. */
function backendFingerprint(): string {
  const hash = createHash("sha256");
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) walk(file);
      else hash.update(`${path.relative(env.backendDir, file)}\n`).update(readFileSync(file));
    }
  };
  walk(env.backendDir);
  return hash.digest("hex");
}

/** The requests sent since `mark`, as "METHOD status body-keys". */
function requestsSince(mark: number): string[] {
  return server
    .journal()
    .slice(mark)
    .map((e) => `${e.method} ${e.status} ${Object.keys((e.body ?? {}) as object).sort().join(",")}`);
}

const GROUPS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];

// The stack every test below starts from (a fixture, not a test): up, then changed out of band.
beforeAll(async () => {
  groupsFile = path.join(env.workDir, "groups.yaml");
  writeFileSync(groupsFile, `groups:\n${GROUPS.map((id) => `  - { name: "Group ${id}", userGroupId: ${id}, properties: { seats: 1 } }`).join("\n")}\n`);
  const up = await cli(RW_KEY, "up", "--file", groupsFile, "--yes");
  expect(up.code, up.stderr).toBe(0);
  // Out of band: deleted, renamed, properties changed, token rotated.
  const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: RW_KEY });
  const token = (id: string) => server.groups().find((g) => g.user_group_id === id)!.token;
  await operator.delete({ current_token: token("alpha") });
  await operator.update({ user_group_id: "bravo", name: "Bravo Renamed" });
  await operator.update({ user_group_id: "charlie", properties: { seats: 99 } });
  await operator.rotateToken(token("delta"));
  await operator.close();
  expectNoSecretPrinted();
});

// What each test's runs printed is scanned right after it (a token or key found fails that test): no test relies
// on the others' output, and a test that printed nothing has nothing to prove here.
afterEach(() => expectNoSecretPrinted());

function expectNoSecretPrinted(): void {
  const all = printed.splice(0).join("\n");
  for (const secret of [RW_KEY, RO_KEY]) expect(all).not.toContain(secret);
  expect(all).not.toMatch(/\b[0-9a-f]{64}\b/);
}

// The steps below take the stack of the fixture through its life, each from where the last left it.
const step = story();

describe("drift, refresh and destroy without side effects", () => {
  step("drift with a read-write key and no groups file: exit 3, a table of what drifted; only PUTs of an id; state unchanged", async () => {
    const before = backendFingerprint();
    const groupsBefore = server.groups();
    const mark = server.journal().length;
    const drift = await cli(RW_KEY, "drift", "--stack", "default");
    expect(drift.code, drift.stderr).toBe(3);
    expect(drift.stdout).toMatch(/default\.alpha\s+deleted/);
    expect(drift.stdout).toMatch(/default\.bravo\s+renamed\s+name "Group bravo" in the state, "Bravo Renamed" on the service/);
    expect(drift.stdout).toMatch(/default\.charlie\s+properties changed/);
    expect(drift.stdout).toMatch(/default\.delta\s+token rotated/);
    expect(drift.stdout).not.toMatch(/echo|foxtrot/);
    expect(backendFingerprint()).toBe(before);
    expect(server.groups()).toEqual(groupsBefore);
    const requests = requestsSince(mark);
    expect(requests.sort()).toEqual([...GROUPS.map((id) => (id === "alpha" ? "PUT 404 user_group_id" : "PUT 200 user_group_id"))].sort());
  });

  step("drift with a read-only key and the file: also what up would change, a Markdown summary, reads only", async () => {
    const before = backendFingerprint();
    const summary = path.join(env.workDir, "drift.md");
    const mark = server.journal().length;
    const drift = await cli(RO_KEY, "drift", "--stack", "default", "--file", groupsFile, "--json", "--summary-file", summary);
    expect(drift.code, drift.stderr).toBe(3);
    const report = JSON.parse(drift.stdout) as { inSync: boolean; checked: number; drift: Array<{ resourceName: string; kind: string }> };
    expect(report).toMatchObject({ inSync: false, checked: 6 });
    expect(report.drift.map((d) => `${d.resourceName} ${d.kind}`)).toEqual([
      "default.alpha deleted",
      "default.bravo renamed",
      "default.bravo differs from file",
      "default.charlie properties changed",
      "default.charlie differs from file",
      "default.delta token rotated",
    ]);
    expect(backendFingerprint()).toBe(before);
    // A read-only key cannot PUT (403) and reads with GET, which it cannot turn into a create (403 for the deleted one).
    const requests = requestsSince(mark);
    expect(requests.every((r) => /^(PUT 403|GET 200|GET 403) /.test(r)), requests.join("\n")).toBe(true);
    expect(requests.filter((r) => r.startsWith("GET 403"))).toHaveLength(1);
    const markdown = readFileSync(summary, "utf8");
    expect(markdown).toContain("| default.delta | token rotated |");
    expect(statSync(summary).mode & 0o077).toBe(0);
  });

  step("a refresh of deleted groups sends no create and no delete, with a read-only and with a read-write key; drift is in sync after it", async () => {
    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: RW_KEY });
    let groupsBefore = server.groups();
    let mark = server.journal().length;
    const readOnly = await cli(RO_KEY, "refresh", "--stack", "default");
    expect(readOnly.code, readOnly.stderr).toBe(0);
    expect(readOnly.stdout).toMatch(/default\.alpha\s+default\s+\S*\s*delete/);
    let requests = requestsSince(mark);
    expect(requests.every((r) => /^(PUT 403|GET 200|GET 403) /.test(r)), requests.join("\n")).toBe(true);
    expect(server.groups()).toEqual(groupsBefore);

    await operator.delete({ current_token: server.groups().find((g) => g.user_group_id === "echo")!.token });
    await operator.close();
    groupsBefore = server.groups();
    mark = server.journal().length;
    const readWrite = await cli(RW_KEY, "refresh", "--stack", "default");
    expect(readWrite.code, readWrite.stderr).toBe(0);
    expect(readWrite.stdout).toMatch(/default\.echo\s+default\s+\S*\s*delete/);
    requests = requestsSince(mark);
    expect(requests.every((r) => /^PUT (200|404) user_group_id$/.test(r)), requests.join("\n")).toBe(true);
    expect(requests).toContain("PUT 404 user_group_id");
    expect(server.groups()).toEqual(groupsBefore);

    // Drift after the refresh: in sync, exit 0.
    const drift = await cli(RO_KEY, "drift", "--stack", "default");
    expect(drift.code, drift.stdout + drift.stderr).toBe(0);
    expect(drift.stdout).toMatch(/in sync \(4 groups read, nothing changed\)/);
  });

  step("takes over a lock whose run is gone (same host, its pid dead) by itself, and says so", async () => {
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const lockDir = path.join(env.backendDir, ".pulumi", "locks", "organization", "user-groups", "default");
    mkdirSync(lockDir, { recursive: true });
    const lockFile = path.join(lockDir, `${randomUUID()}.json`);
    writeFileSync(lockFile, JSON.stringify({ pid: dead, username: "ci", hostname: hostname(), timestamp: "2026-01-02T03:04:05Z" }));
    const up = await cli(RW_KEY, "up", "--file", groupsFile, "--yes");
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).toContain(`took over stack "default" from a run that is gone: removed the lock of pid ${dead} on host "${hostname()}" (since 2026-01-02T03:04:05Z)`);
    expect(existsSync(lockFile)).toBe(false);
  });

  step("destroys without a groups file; a stack that does not exist is refused, not created", async () => {
    const destroy = await cli(RW_KEY, "destroy", "--stack", "default", "--yes");
    expect(destroy.code, destroy.stderr).toBe(0);
    expect(server.groups()).toEqual([]);
    const missing = await cli(RW_KEY, "refresh", "--stack", "nosuch");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/Stack "nosuch" does not exist in file:\/\/.*nothing to read or delete/);
    // destroy too (its check for a fleet's stack must not make the stack it asks about)
    const destroyMissing = await cli(RW_KEY, "destroy", "--stack", "nosuch", "--yes");
    expect(destroyMissing.code).toBe(1);
    expect(destroyMissing.stderr).toMatch(/Stack "nosuch" does not exist in file:\/\/.*nothing to read or delete/);
    // Neither made it: the backend holds no file of it (the stack file, its backups and history, a lock). The
    // directory of the stack that does exist is where the backend writes them, so the check can fail.
    const named = (dir: string): string[] =>
      existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? named(path.join(dir, entry.name)) : [path.join(dir, entry.name)])) : [];
    const files = named(path.join(env.backendDir, ".pulumi")).map((file) => path.relative(env.backendDir, file));
    expect(files.some((file) => file.includes("/default"))).toBe(true);
    expect(files.filter((file) => file.includes("nosuch"))).toEqual([]);
  });
});
