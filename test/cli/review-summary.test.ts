// Issue #33, item 5: summaries a reviewer can approve from, run through the
// `user-groups` command against the fake server as CI runs it. A create shows
// the group's name, id, mapping and properties (never a token); an update and
// drift show each changed key old -> new (properties key by key); a rotation
// and a replacement say the old token stops working at once; the apply's
// heading and counts say what was done ("2 created", "Applied to stack").
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DriftReport, RunResult } from "../../provider/automation/index";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { UserGroupsClient } from "../../provider/client/http-client";
import { driftSummaryMarkdown, formatDriftTable, formatTable, runSummaryMarkdown, withCreateDetails } from "../../provider/cli/output";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "review-summary-key-0000000001";
let server: FakeServer;
let env: PulumiTestEnv;
let groupsFile: string;
const printed: string[] = [];

async function cli(...args: string[]): Promise<CliRun> {
  const run = await runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...env.envVars, GITHUB_STEP_SUMMARY: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  });
  printed.push(run.stdout, run.stderr);
  return run;
}

const tokens = () => server.groups().map((g) => g.token);

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("review-summary");
  groupsFile = path.join(env.workDir, "groups.yaml");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("the summaries of a group's life, through the command", () => {
  it("a preview of new groups shows each one's name, id, mapping and properties; the up says 2 created", async () => {
    writeFileSync(
      groupsFile,
      [
        "groups:",
        "  - { name: Acme Corp, userGroupId: acme, mapping: { sales: warehouse-eu }, properties: { seats: 40, region: eu } }",
        '  - { name: "Evil @org/team", userGroupId: evil, properties: { link: "https://evil.example" } }',
        "",
      ].join("\n"),
    );
    const summary = path.join(env.workDir, "preview.md");
    const preview = await cli("preview", "--file", groupsFile, "--summary-file", summary);
    expect(preview.code, preview.stderr).toBe(0);
    const markdown = readFileSync(summary, "utf8");
    expect(markdown).toContain("### user-groups: Preview of stack `default`");
    expect(markdown).toContain("**2 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged**");
    expect(markdown).toContain('| default.acme | create | new group; name: "Acme Corp"; userGroupId: "acme"; mapping.sales: "warehouse-eu"; properties.region: "eu"; properties.seats: 40 |');
    // Outside text that is not plain words stays text: a code span (no mention, no link).
    expect(markdown).toContain('| default.evil | create | new group; `name: "Evil @org/team"`; userGroupId: "evil"; `properties.link: "https://evil.example"` |');
    // The terminal shows the same under each new group's row.
    expect(preview.stdout).toMatch(/\+ default\.acme .*create\n {6}name: "Acme Corp"\n {6}userGroupId: "acme"\n {6}mapping\.sales: "warehouse-eu"\n {6}properties\.region: "eu"\n {6}properties\.seats: 40\n/);
    expect(preview.stdout).toContain('preview of stack "default": 2 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged');

    const applied = path.join(env.workDir, "up.md");
    const up = await cli("up", "--file", groupsFile, "--yes", "--summary-file", applied);
    expect(up.code, up.stderr).toBe(0);
    const upMarkdown = readFileSync(applied, "utf8");
    expect(upMarkdown).toContain("### user-groups: Applied to stack `default`");
    expect(upMarkdown).toContain("**2 created, 0 updated, 0 replaced, 0 deleted, 0 unchanged**");
    expect(upMarkdown).toContain('| default.acme | create | new group; name: "Acme Corp";');
    expect(up.stdout).toContain('up of stack "default": 2 created, 0 updated, 0 replaced, 0 deleted, 0 unchanged');
    for (const token of tokens()) {
      expect(markdown + upMarkdown + preview.stdout + up.stdout).not.toContain(token);
    }
  });

  it("drift names each changed key old -> new (properties key by key), and what up would change", async () => {
    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    await operator.update({ user_group_id: "acme", name: "Acme Renamed", properties: { seats: 41, region: "eu", tier: "gold" } });
    await operator.close();
    const summary = path.join(env.workDir, "drift.md");
    const drift = await cli("drift", "--file", groupsFile, "--summary-file", summary);
    expect(drift.code, drift.stderr).toBe(3);
    const markdown = readFileSync(summary, "utf8");
    const rows = markdown.split("\n").filter((line) => line.startsWith("| default.acme"));
    expect(rows).toEqual([
      '| default.acme | renamed | name "Acme Corp" in the state, "Acme Renamed" on the service; name: "Acme Corp" → "Acme Renamed" |',
      '| default.acme | properties changed | properties on the service differ from the state; properties.seats: 40 → 41; properties.tier: (none) → "gold" |',
      '| default.acme | differs from file | up would change name, properties; name: "Acme Renamed" → "Acme Corp"; properties.seats: 41 → 40; properties.tier: "gold" → (none) |',
    ]);
    expect(drift.stdout).toMatch(/default\.acme\s+properties changed\s+properties on the service differ from the state\n {6}properties\.seats: 40 → 41\n {6}properties\.tier: \(none\) → "gold"\n/);
    // --json carries the same as fieldChanges.
    const json = await cli("drift", "--json");
    const report = JSON.parse(json.stdout) as DriftReport;
    expect(report.drift.find((d) => d.kind === "properties changed")?.fieldChanges).toEqual([
      { field: "properties", old: { seats: 40, region: "eu" }, new: { seats: 41, region: "eu", tier: "gold" } },
    ]);
  });

  it("an update shows old -> new; a rotation and a deletion say what they do to the token", async () => {
    writeFileSync(groupsFile, "groups:\n  - { name: Acme Corp, userGroupId: acme, mapping: { sales: warehouse-us }, properties: { seats: 40, region: eu }, rotationTrigger: '2026-11' }\n");
    const summary = path.join(env.workDir, "preview2.md");
    const preview = await cli("preview", "--file", groupsFile, "--summary-file", summary);
    expect(preview.code, preview.stderr).toBe(0);
    const markdown = readFileSync(summary, "utf8");
    expect(markdown).toContain("**0 to create, 1 to update, 0 to replace, 1 to delete, 0 unchanged**");
    expect(markdown).toContain(
      '| default.acme | update | mapping.sales: "warehouse-eu" → "warehouse-us"; token rotation (rotationTrigger (none) → "2026-11"): the old token stops working at once |',
    );
    expect(markdown).toContain('| default.evil | delete | `deleted (no longer declared; was "Evil @org/team"): the group and its token are gone at once` |');
  });
});

describe("the same rules, on results a library caller builds", () => {
  const result = (operation: RunResult["operation"], groups: RunResult["groups"]): RunResult => {
    const summary = { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
    for (const g of groups) if (g.change in summary) summary[g.change as keyof typeof summary] += 1;
    return { operation, stack: "prod", backendUrl: "file:///x", changed: true, summary, groups };
  };

  it("a replacement whatever its reason, a rotation without values, each says the old token stops working", () => {
    const markdown = runSummaryMarkdown(
      result("preview", [
        { resourceName: "default.a", userGroupId: "a", change: "replace", fieldChanges: [{ field: "mapping", old: { x: "1" }, new: { x: "2" } }] },
        { resourceName: "default.b", userGroupId: "b", change: "replace", changedFields: ["profile"] },
        { resourceName: "default.c", userGroupId: "c", change: "update", changedFields: ["rotationTrigger"] },
      ]),
    );
    for (const id of ["a", "b", "c"]) expect(markdown.split("\n").find((l) => l.startsWith(`| default.${id} `))).toContain("the old token stops working at once");
  });

  it("a created group's details come from its spec: never a token, at most ten keys a field, every value escaped", () => {
    const token = "t".repeat(64);
    const properties = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${String(i).padStart(2, "0")}`, i]));
    const run = withCreateDetails(result("up", [{ resourceName: "default.n", userGroupId: "n", change: "create", token, teamId: 3 }]), [
      { name: "N\u001b[2J\u202e", userGroupId: "n", properties, adoptExisting: true },
    ]);
    const table = formatTable(run);
    const markdown = runSummaryMarkdown(run);
    for (const text of [table, markdown]) {
      expect(text).not.toContain(token);
      expect(text).not.toMatch(/[\u001b\u202e]/u);
      expect(text).toContain("properties.k09: 9");
      expect(text).not.toContain("properties.k10");
      expect(text).toContain("... and 4 more keys of properties");
      expect(text).toContain("adoptExisting: true (an existing group with this id is taken over, its token kept)");
    }
    expect(markdown).toContain("**1 created, 0 updated, 0 replaced, 0 deleted, 0 unchanged**");
  });

  it("drift without values (an older report) keeps its one-line detail", () => {
    const report: DriftReport = {
      stack: "prod",
      backendUrl: "file:///x",
      checked: 1,
      inSync: false,
      drift: [{ resourceName: "default.a", userGroupId: "a", kind: "token rotated", detail: "the token was rotated out of band; the state's token no longer works" }],
    };
    expect(driftSummaryMarkdown(report)).toContain("| default.a | token rotated | the token was rotated out of band; the state's token no longer works |");
    expect(formatDriftTable(report).split("\n")).toHaveLength(4);
  });
});
