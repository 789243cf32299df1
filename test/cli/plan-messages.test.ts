// Issue #41 item 5: what `up --plan-file` says when it cannot apply the reviewed
// plan, as a user of the command reads it (no --json, no terminal).
// - No plan file: run `preview --plan-file` first, with the command to run.
// - A plan mismatch: the check's own preview rows say "planned (preview)", so no
//   "create done" line reads as if the refused up had applied something.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import type { GroupEvent } from "../../provider/automation/internal";
import { progressPrinter } from "../../provider/cli/output";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "plan-messages-key-0000001";
let server: FakeServer;
let env: PulumiTestEnv;

function cli(...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, { cwd: env.workDir, env: { ...process.env, ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY } });
}
const write = (name: string, text: string) => writeFileSync(path.join(env.workDir, name), text);
const ids = () => server.groups().map((g) => g.user_group_id).sort();

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("plan-messages");
  write("groups.yaml", "groups:\n  - name: Acme Corp\n    userGroupId: acme\n");
  const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("up --plan-file", () => {
  it("without the plan file: says to run preview --plan-file first, with the command; nothing changed", async () => {
    write("groups.yaml", "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
    const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json");
    expect(up.code).toBe(2);
    expect(up.stderr).toContain(
      'up of stack "prod" failed: The plan file "plan.json" does not exist: `up --plan-file` applies the changes a `preview --plan-file` wrote there. ' +
        "Run `user-groups preview --file <groups file> --stack prod --plan-file plan.json` first (on the pull request), and keep that file for the up. Nothing was changed.",
    );
    expect(ids()).toEqual(["acme"]);
  });

  it("a mismatch: the check's preview rows say planned, never done; then the refusal", async () => {
    const preview = await cli("preview", "--file", "groups.yaml", "--stack", "prod", "--plan-file", "plan.json");
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stderr).toContain("  + default.globex: create planned (preview)");
    expect(preview.stderr).not.toContain("create done");
    // Main moved before the merge: Hooli added.
    write("groups.yaml", "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n  - name: Hooli\n    userGroupId: hooli\n");
    const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json");
    expect(up.code).toBe(2);
    expect(up.stderr).toContain("  + default.hooli: create planned (preview)");
    expect(up.stderr).not.toMatch(/: (create|update|delete|replace) done/);
    expect(up.stderr).toContain("a preview now finds other changes than the reviewed one");
    expect(up.stderr).toContain("default.hooli: reviewed: no change; now: create");
    expect(up.stderr).toContain("Nothing was changed.");
    expect(ids()).toEqual(["acme"]);
    // The reviewed plan, as it was, still applies once main is back to it; that up's rows are done.
    write("groups.yaml", "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
    const merged = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json");
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stderr).toContain("  + default.globex: create done");
    expect(ids()).toEqual(["acme", "globex"]);
  });
});

describe("progressPrinter of a preview", () => {
  const event = (resourceName: string, change: GroupEvent["change"], phase: GroupEvent["phase"]) => ({ resourceName, change, phase, engineEvent: {} }) as unknown as GroupEvent;
  it("says planned where an applying run says done", () => {
    const out: string[] = [];
    const print = progressPrinter((text) => out.push(text), false, { preview: true });
    print(event("default.acme", "create", "started"));
    print(event("default.acme", "create", "done"));
    print(event("default.globex", "delete", "failed"));
    expect(out).toEqual(["  + default.acme: create ...\n", "  + default.acme: create planned (preview)\n", "  - default.globex: delete FAILED\n"]);
  });
});
