// Issue 23 item 6: mass deletion needs an explicit word. An up that would delete
// every group of a non-empty stack (an empty groups file) is refused unless
// --allow-delete-all / allowDeleteAll; --max-deletes / maxDeletes caps what one
// run deletes. Refused before any change, decided from the state (no engine run).
// Previews show old -> new of each changed field, and flag rotations and deletions.
import { lstatSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { assertDeletionsAllowed } from "../../../provider/automation/model/delete-guard";
import { REPO_ROOT } from "../../support/pulumi-env";
import { useStackFixture } from "../../support/stack-fixture";
import { type CliRun, runUserGroupsCli, USER_GROUPS_CLI } from "../../support/user-groups-cli";

type AutomationModule = typeof import("../../../provider/automation");
type CliModule = typeof import("../../../provider/cli/user-groups");
const load = createRequire(path.join(REPO_ROOT, "package.json"));
const automation = load("pulumi-user-groups/automation") as AutomationModule;
const cliModule = load(USER_GROUPS_CLI) as CliModule;

const { server, env, envVars: runEnv, runOptions } = useStackFixture({ label: "delete-guard", apiKeys: ["delete-guard-key-00000001"] });

const GROUPS = [
  { name: "Acme", userGroupId: "acme", properties: { seats: 40, region: "eu" } },
  { name: "Globex", userGroupId: "globex" },
  { name: "Initech", userGroupId: "initech" },
];

beforeAll(async () => {
  writeFileSync(path.join(env.workDir, "empty.yaml"), "groups: []\n");
  const changed = [
    { name: "Acme Corp", userGroupId: "acme", properties: { seats: 41, region: "eu" } },
    { name: "Globex", userGroupId: "globex", rotationTrigger: "2026-11" },
  ];
  writeFileSync(path.join(env.workDir, "changed.yaml"), JSON.stringify({ groups: changed }));
});

const options = () => runOptions("prod", { workDir: path.join(env.workDir, ".user-groups") });
const cli = (...args: string[]): Promise<CliRun> => runUserGroupsCli(args, { cwd: env.workDir, env: { ...process.env, ...runEnv() } });
const held = () => server.groups().map((g) => g.user_group_id).sort();

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof automation.DeletionRefusedError>> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(automation.DeletionRefusedError);
  return error as InstanceType<typeof automation.DeletionRefusedError>;
}

describe("assertDeletionsAllowed", () => {
  const plan = (held: number, deleting: string[], operation: "up" | "destroy" = "up") => ({ operation, stack: "prod", held, deleting });
  it("refuses deleting every group of a non-empty stack unless allowed, and more than maxDeletes", () => {
    expect(() => assertDeletionsAllowed(plan(2, ["default.a", "default.b"]), {})).toThrow(/would delete every group of stack "prod" \(2: "default\.a", "default\.b"\)/);
    expect(() => assertDeletionsAllowed(plan(2, ["default.a", "default.b"]), { allowDeleteAll: true })).not.toThrow();
    expect(() => assertDeletionsAllowed(plan(0, []), {})).not.toThrow(); // a new or empty stack
    expect(() => assertDeletionsAllowed(plan(3, ["default.a"]), {})).not.toThrow();
    expect(() => assertDeletionsAllowed(plan(3, ["default.a", "default.b"]), { maxDeletes: 1 })).toThrow(/would delete 2 groups .* more than the 1 allowed/);
    expect(() => assertDeletionsAllowed(plan(9, ["a", "b", "c", "d", "e", "f", "g"]), { maxDeletes: 0 })).toThrow(/"a", "b", "c", "d", "e" and 2 more/);
    // destroy deletes everything by its name: only maxDeletes applies.
    expect(() => assertDeletionsAllowed(plan(2, ["a", "b"], "destroy"), {})).not.toThrow();
  });
});

describe("an up that deletes", () => {
  it("is refused for an empty groups file on a non-empty stack, and beyond maxDeletes, before any change (library)", async () => {
    await automation.provisionUserGroups({ ...options(), groups: GROUPS });
    expect(held()).toEqual(["acme", "globex", "initech"]);
    const journal = server.journal().length;

    const all = await rejection(automation.provisionUserGroups({ ...options(), groups: [] }));
    expect(all.code).toBe("delete_all_refused");
    expect(all.deleting).toEqual(["default.acme", "default.globex", "default.initech"]);
    expect(all.message).toMatch(/allowDeleteAll: true/);

    const capped = await rejection(automation.provisionUserGroups({ ...options(), groups: GROUPS.slice(0, 1), maxDeletes: 1 }));
    expect(capped.code).toBe("too_many_deletes");
    expect(capped.deleting).toEqual(["default.globex", "default.initech"]);

    const destroy = await rejection(automation.destroyUserGroups({ ...options(), maxDeletes: 2 }));
    expect(destroy.code).toBe("too_many_deletes");
    await expect(automation.provisionUserGroups({ ...options(), groups: [], maxDeletes: -1 })).rejects.toThrow(/maxDeletes must be a whole number/);

    expect(server.journal().length).toBe(journal); // nothing reached the service
    expect(held()).toEqual(["acme", "globex", "initech"]);
  });

  it("the CLI refuses `up --yes` of an empty file (exit 2) and names the flag", async () => {
    const run = await cli("up", "--file", "empty.yaml", "--stack", "prod", "--yes");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/would delete every group of stack "prod" \(3: "default\.acme", "default\.globex", "default\.initech"\)/);
    expect(run.stderr).toMatch(/user-groups up --allow-delete-all/);
    const capped = await cli("up", "--file", "empty.yaml", "--stack", "prod", "--yes", "--allow-delete-all", "--max-deletes", "2");
    expect(capped.code).toBe(2);
    expect(capped.stderr).toMatch(/would delete 3 groups .* more than the 2 allowed/);
    expect(held()).toEqual(["acme", "globex", "initech"]);
  });

  it("a preview shows old -> new, flags the rotation and the deletion, in the table and the summary, never a token", async () => {
    // A checkout may hold a symlink where the summary goes (say, to a file a later step runs): it is replaced, never written through.
    const victim = path.join(env.workDir, "victim.sh");
    writeFileSync(victim, "echo precious\n");
    symlinkSync(victim, path.join(env.workDir, "preview.md"));
    const run = await cli("preview", "--file", "changed.yaml", "--stack", "prod", "--summary-file", "preview.md");
    expect(readFileSync(victim, "utf8")).toBe("echo precious\n");
    expect(lstatSync(path.join(env.workDir, "preview.md")).isFile()).toBe(true);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('      name: "Acme" → "Acme Corp"');
    expect(run.stdout).toContain("      properties.seats: 40 → 41");
    expect(run.stdout).not.toContain("properties.region");
    expect(run.stdout).toContain('      token rotation (rotationTrigger (none) → "2026-11"): the old token stops working at once');
    expect(run.stdout).toContain('      deleted (no longer declared; was "Initech"): the group and its token are gone at once');
    const summary = readFileSync(path.join(env.workDir, "preview.md"), "utf8");
    expect(summary).toContain('| default.acme | update | name: "Acme" → "Acme Corp"; properties.seats: 40 → 41 |');
    expect(summary).toContain('| default.globex | update | token rotation (rotationTrigger (none) → "2026-11"): the old token stops working at once |');
    expect(summary).toContain('| default.initech | delete | deleted (no longer declared; was "Initech"): the group and its token are gone at once |');
    for (const text of [run.stdout, run.stderr, summary]) expect(text).not.toMatch(/\b[0-9a-f]{64}\b/);
  });

  it("on a terminal, the refusal comes from the preview, before anyone is asked", async () => {
    let asked = false;
    const stderr: string[] = [];
    // In this process, as the command runs: its environment is this process's.
    const saved = { ...process.env };
    Object.assign(process.env, runEnv());
    const code = await cliModule
      .main(["up", "--file", path.join(env.workDir, "empty.yaml"), "--stack", "prod"], {
        stdout: () => {},
        stderr: (text) => stderr.push(text),
        isTty: true,
        progressIsTty: false,
        confirm: async () => {
          asked = true;
          return true;
        },
        env: process.env,
      })
      .finally(() => {
        for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
        Object.assign(process.env, saved);
      });
    expect(code, stderr.join("")).toBe(cliModule.EXIT_USAGE);
    expect(asked).toBe(false);
    expect(stderr.join("")).toMatch(/would delete every group of stack "prod"/);
    expect(held()).toEqual(["acme", "globex", "initech"]);
  });

  it("with --allow-delete-all, the empty file deletes every group", async () => {
    const run = await cli("up", "--file", "empty.yaml", "--stack", "prod", "--yes", "--allow-delete-all", "--max-deletes", "3");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/0 created, 0 updated, 0 replaced, 3 deleted, 0 unchanged/);
    expect(held()).toEqual([]);
  });
});
