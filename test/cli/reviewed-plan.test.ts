// Issue #33 item 4: apply what was reviewed. The preview on a pull request
// records the changes it showed (`--plan-file`, and their digest in the JSON and
// the summary); `up --plan-file` on merge refuses to apply anything else, naming
// each difference, when main moved in between. Tried: a merge after main moved,
// a plan file edited by hand, another stack's plan.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { changesDigest, parseReviewedPlan, planDifferences, type PlannedChange, reviewedPlanOf } from "../../provider/cli/reviewed-plan";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "reviewed-plan-key-0000001";
let server: FakeServer;
let env: PulumiTestEnv;

function cli(...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, { cwd: env.workDir, env: { ...process.env, ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY } });
}
const write = (name: string, text: string) => writeFileSync(path.join(env.workDir, name), text);
const ids = () => server.groups().map((g) => `${g.user_group_id}:${g.name}`).sort();

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("reviewed-plan");
  write("groups.yaml", "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
  const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("the reviewed plan", () => {
  const rename: PlannedChange = { resourceName: "default.acme", change: "update", declared: { name: "Acme Inc", userGroupId: "acme" }, fields: [{ field: "name", old: "Acme Corp", new: "Acme Inc" }] };
  const create: PlannedChange = { resourceName: "default.initech", change: "create", declared: { name: "Initech", userGroupId: "initech", properties: { seats: 3, tier: "a" } } };

  it("has one digest for one change set, whatever the order of keys; a hand-edited file is refused", () => {
    const reordered: PlannedChange = { ...create, declared: { properties: { tier: "a", seats: 3 }, userGroupId: "initech", name: "Initech" } };
    expect(changesDigest("prod", [rename, create])).toBe(changesDigest("prod", [rename, reordered]));
    expect(changesDigest("prod", [rename, create])).not.toBe(changesDigest("staging", [rename, create]));
    const plan = reviewedPlanOf("prod", [rename, create]);
    expect(parseReviewedPlan(JSON.stringify(plan))).toEqual(plan);
    const edited = JSON.parse(JSON.stringify(plan)) as { changes: Array<{ declared?: { name?: string } }> };
    edited.changes[1]!.declared!.name = "Initech (edited)";
    expect(parseReviewedPlan(JSON.stringify(edited))).toMatch(/digest does not match/);
    expect(parseReviewedPlan("{")).toMatch(/not JSON/);
    expect(parseReviewedPlan(JSON.stringify({ ...plan, extra: 1 }))).toMatch(/not a plan file/);
  });

  it("names each difference: a group added, one dropped, one whose values changed", () => {
    const other: PlannedChange = { ...rename, fields: [{ field: "name", old: "Acme Corp", new: "Acme Ltd" }], declared: { name: "Acme Ltd", userGroupId: "acme" } };
    const hooli: PlannedChange = { resourceName: "default.hooli", change: "create", declared: { name: "Hooli", userGroupId: "hooli" } };
    expect(planDifferences([rename, create], [rename, create])).toEqual([]);
    expect(planDifferences([rename, create], [other, hooli])).toEqual([
      "default.acme: update of name, with other values than reviewed",
      "default.hooli: reviewed: no change; now: create",
      "default.initech: reviewed: create; now: no change",
    ]);
  });

  it("merges what was reviewed: the preview's plan applies", async () => {
    write("groups.yaml", "groups:\n  - name: Acme Inc\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
    const preview = await cli("preview", "--file", "groups.yaml", "--stack", "prod", "--plan-file", "plan.json", "--json", "--summary-file", "summary.md");
    expect(preview.code, preview.stderr).toBe(0);
    const digest = (JSON.parse(preview.stdout) as { changeDigest: string }).changeDigest;
    const plan = JSON.parse(readFileSync(path.join(env.workDir, "plan.json"), "utf8")) as { digest: string; changes: PlannedChange[] };
    expect(plan.digest).toBe(digest);
    expect(plan.changes).toEqual([{ resourceName: "default.acme", change: "update", declared: { name: "Acme Inc", userGroupId: "acme" }, fields: [{ field: "name", old: "Acme Corp", new: "Acme Inc" }] }]);
    expect(readFileSync(path.join(env.workDir, "summary.md"), "utf8")).toContain(digest);
    const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--json");
    expect(up.code, up.stderr).toBe(0);
    expect((JSON.parse(up.stdout) as { changeDigest: string }).changeDigest).toBe(digest);
    expect(ids()).toEqual(["acme:Acme Inc", "globex:Globex"]);
  });

  it("refuses to merge after main moved: exit 2 naming the difference, nothing changed", async () => {
    write("groups.yaml", "groups:\n  - name: Acme Inc\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n  - name: Initech\n    userGroupId: initech\n");
    const preview = await cli("preview", "--file", "groups.yaml", "--stack", "prod", "--plan-file", "plan.json");
    expect(preview.code, preview.stderr).toBe(0);
    // Main moved: another commit renamed Globex and added Hooli before this one merged.
    write("groups.yaml", "groups:\n  - name: Acme Inc\n    userGroupId: acme\n  - name: Globex Corp\n    userGroupId: globex\n  - name: Initech\n    userGroupId: initech\n  - name: Hooli\n    userGroupId: hooli\n");
    const before = server.journal().filter((entry) => entry.method !== "GET").length;
    const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--json");
    expect(up.code, up.stderr).toBe(2);
    const error = (JSON.parse(up.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("plan_mismatch");
    expect(error.message).toContain("default.hooli: reviewed: no change; now: create");
    expect(error.message).toContain("default.globex: reviewed: no change; now: update of name");
    expect(error.message).not.toContain("default.initech");
    expect(ids()).toEqual(["acme:Acme Inc", "globex:Globex"]);
    expect(server.journal().filter((entry) => entry.method !== "GET").length).toBe(before);
  });

  it("refuses a plan file edited by hand, and another stack's", async () => {
    const planFile = path.join(env.workDir, "plan.json");
    const plan = JSON.parse(readFileSync(planFile, "utf8")) as { stack: string; changes: Array<{ declared?: { name?: string } }> };
    plan.changes[0]!.declared!.name = "Initech (edited)";
    writeFileSync(planFile, JSON.stringify(plan));
    const edited = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--json");
    expect(edited.code).toBe(2);
    expect(edited.stdout).toContain("plan_file_invalid");
    writeFileSync(planFile, JSON.stringify(reviewedPlanOf("staging", [])));
    const other = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--json");
    expect(other.code).toBe(2);
    expect(other.stdout).toContain("staging");
    expect(ids()).toEqual(["acme:Acme Inc", "globex:Globex"]);
  });
});
