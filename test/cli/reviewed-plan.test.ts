// Issue #33 item 4: apply what was reviewed. The preview on a pull request
// records the changes it showed (`--plan-file`, and their digest in the JSON and
// the summary); `up --plan-file` on merge refuses to apply anything else, naming
// each difference, when main moved in between. Tried: a merge after main moved,
// a plan file edited by hand, another stack's plan.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { parseCliArgs } from "../../provider/cli/args";
import { changesDigest, parseReviewedPlan, planDifferences, type PlannedChange, planOriginMismatch, reviewedPlanOf } from "../../provider/cli/reviewed-plan";
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

  it("records the commit and run it is the preview of, and is refused for another commit, another run, or none", () => {
    const head = "a".repeat(40);
    const plan = reviewedPlanOf("prod", [rename, create], { commit: head, run: "1234" });
    const parsed = parseReviewedPlan(JSON.stringify(plan));
    expect(parsed).toEqual(plan);
    expect((parsed as typeof plan).origin).toEqual({ commit: head, run: "1234" });
    // The digest is the change set's: one change set, one digest, whichever run previewed it.
    expect(plan.digest).toBe(reviewedPlanOf("prod", [rename, create]).digest);
    expect(planOriginMismatch(plan, { commit: head, run: "1234" })).toBeUndefined();
    expect(planOriginMismatch(plan, undefined)).toBeUndefined();
    const later = "b".repeat(40);
    expect(planOriginMismatch(plan, { commit: later, run: "1234" })).toBe(
      `The plan file is the preview of commit ${head} (run 1234), but commit ${later} is being applied: its last push was not previewed (the preview was cancelled, failed, or was still running at the merge). Nothing was changed. Preview commit ${later} (re-run the preview of its pull request), have it reviewed, and apply that plan.`,
    );
    expect(planOriginMismatch(plan, { commit: head, run: "999" })).toMatch(/^The plan file was made by run 1234, not by run 999 it was taken from: it is not that run's preview of commit a{40}\. Nothing was changed\./);
    expect(planOriginMismatch(reviewedPlanOf("prod", [create]), { commit: head, run: "1234" })).toMatch(/^The plan file names no commit or run \(its preview was given no --plan-commit and --plan-run\)/);
    // An origin of another shape is not a plan this command wrote.
    for (const origin of [{ commit: "A".repeat(40), run: "1" }, { commit: head, run: "01" }, { commit: head, run: "1", by: "me" }, { commit: `${head}\n`, run: "1" }]) {
      expect(parseReviewedPlan(JSON.stringify({ ...plan, origin }))).toMatch(/not a plan file/);
    }
  });

  it("takes --plan-commit and --plan-run together, with --plan-file, in their exact shapes", () => {
    const head = "c".repeat(40);
    const base = ["up", "--file", "groups.yaml", "--plan-file", "plan.json"];
    expect(parseCliArgs([...base, "--plan-commit", head, "--plan-run", "77"])).toMatchObject({ planOrigin: { commit: head, run: "77" } });
    expect(parseCliArgs(["preview", "--file", "g.yaml", "--plan-file", "p.json", "--plan-commit", "d".repeat(64), "--plan-run", "1"])).toMatchObject({ planOrigin: { commit: "d".repeat(64), run: "1" } });
    expect(() => parseCliArgs([...base, "--plan-commit", head])).toThrow("--plan-commit and --plan-run go together");
    expect(() => parseCliArgs(["up", "--file", "g.yaml", "--plan-commit", head, "--plan-run", "1"])).toThrow("--plan-commit goes with --plan-file");
    expect(() => parseCliArgs([...base, "--plan-commit", "HEAD", "--plan-run", "1"])).toThrow(/--plan-commit takes a commit's 40 \(or 64\) lowercase hex digits/);
    expect(() => parseCliArgs([...base, "--plan-commit", head, "--plan-run", "1; rm -rf /"])).toThrow(/--plan-run takes a run id/);
    expect(() => parseCliArgs(["refresh", "--plan-commit", head, "--plan-run", "1"])).toThrow(/--plan-commit goes with preview or up/);
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
  it("refuses, before the engine runs, a plan of another commit than the one applied: exit 2, plan_origin_mismatch, nothing changed", async () => {
    const head = "e".repeat(40);
    write("groups.yaml", "groups:\n  - name: Acme Inc\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n  - name: Initech\n    userGroupId: initech\n");
    const preview = await cli("preview", "--file", "groups.yaml", "--stack", "prod", "--plan-file", "plan.json", "--plan-commit", head, "--plan-run", "41");
    expect(preview.code, preview.stderr).toBe(0);
    expect((JSON.parse(readFileSync(path.join(env.workDir, "plan.json"), "utf8")) as { origin: unknown }).origin).toEqual({ commit: head, run: "41" });
    const before = server.journal().length;
    const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--plan-commit", "f".repeat(40), "--plan-run", "41", "--json");
    expect(up.code, up.stderr).toBe(2);
    const error = (JSON.parse(up.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("plan_origin_mismatch");
    expect(error.message).toContain(`is the preview of commit ${head} (run 41), but commit ${"f".repeat(40)} is being applied`);
    expect(server.journal().length).toBe(before);
    expect(ids()).toEqual(["acme:Acme Inc", "globex:Globex"]);
    // The same plan, given its own commit and run, applies.
    const applied = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--plan-file", "plan.json", "--plan-commit", head, "--plan-run", "41");
    expect(applied.code, applied.stderr).toBe(0);
    expect(ids()).toEqual(["acme:Acme Inc", "globex:Globex", "initech:Initech"]);
  });
});
