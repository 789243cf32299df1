// CONTRACT F6 and F1 end to end: ids that look like Pulumi syntax (a target
// glob, a URN separator, the name encoding's own escape) are each their own
// group through the fleet and through `user-groups up --file`, on the fake
// server and in the state, and no call touches a group it did not name. And an
// upgrade: a stack made with the names of the release before the encoding keeps
// every group (same names, same tokens, no change).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GroupSpec, resourceNameOf, UserGroupFleet } from "../../../provider/automation";
import { groupsInState } from "../../../provider/automation/fleet/fleet-state";
import { type RunOptions } from "../../../provider/automation/model/results";
import { selectStack } from "../../../provider/automation/engine/open-stack";
import { UserGroup } from "../../../provider/resource/user-group";
import { useStackFixture } from "../../support/stack-fixture";
import { runUserGroupsCli } from "../../support/user-groups-cli";

const KEY = "names-customer-key-000001";
const TESTING_KEY = "names-testing-key-0000002";
const PASSPHRASE = "names-test";
const { server, env, envVars, runOptions } = useStackFixture({
  label: "names",
  apiKeys: [KEY, { key: TESTING_KEY, environment: "Testing" }],
  passphrase: PASSPHRASE,
});

const engineEnv = () => envVars({ USER_GROUPS_BASE_URL_TESTING: server.url, USER_GROUPS_API_KEY_TESTING: TESTING_KEY });

/** What the server holds, per environment and id: token and name. */
function serverView(environment = "Customer"): Map<string, { token: string; name: string }> {
  return new Map(server.groups().filter((g) => g.environment === environment).map((g) => [g.user_group_id, { token: g.token, name: g.name }]));
}

/** Server groups other than these ids, as they are now. */
function othersThan(ids: readonly string[], environment = "Customer") {
  return [...serverView(environment)].filter(([id]) => !ids.includes(id));
}

/** The ids of the requests that reached the server since `mark`. */
function idsRequestedSince(mark: number): Set<unknown> {
  return new Set(server.journal().slice(mark).map((r) => (r.body as { user_group_id?: unknown } | null)?.user_group_id));
}

describe("UserGroupFleet: ids that look like Pulumi syntax are data", () => {
  /** `default.x` beside `x`, `%2A` beside `*`, a URN separator, a path, a space, non-ASCII. */
  const FIRST = ["a::b", "default.x", "x", "/", " ", "Ünïcødé ✓", "%2A"];
  const GLOBS = ["*", "**"];
  let fleet: UserGroupFleet;
  beforeAll(() => {
    fleet = new UserGroupFleet(runOptions("names", { workDir: path.join(env.workDir, "fleet"), envVars: engineEnv() }));
  });
  afterAll(async () => {
    await fleet?.close();
  });

  it("creates each as its own group, each caller getting its own", async () => {
    const results = await Promise.all(FIRST.map((id) => fleet.ensure({ name: `Tenant ${id}`, userGroupId: id })));
    // On the record-first path: answered before any engine run; one adopting run puts them in the state.
    await fleet.signUps?.closeAll();
    expect(fleet.engineRuns + (fleet.signUps?.adoptingRuns ?? 0)).toBe(1);
    const onServer = serverView();
    expect([...onServer.keys()].sort()).toEqual([...FIRST].sort());
    for (const [i, id] of FIRST.entries()) {
      expect(results[i]).toMatchObject({ userGroupId: id, change: "create", name: `Tenant ${id}`, resourceName: resourceNameOf({ userGroupId: id }) });
      expect(results[i]!.token).toBe(onServer.get(id)!.token);
    }
    // Ids that were safe keep their plain names; '%' forces the encoding.
    expect(results.map((r) => r.resourceName)).toEqual(["default.a%3A%3Ab", "default.default.x", "default.x", "default./", "default. ", "default.Ünïcødé ✓", "default.%252A"]);
  });

  it("ensures '*' and '**' (a --target glob) touching no other group, on the server or in the state", async () => {
    const before = othersThan(GLOBS);
    const mark = server.journal().length;
    const [star, twoStars] = await Promise.all(GLOBS.map((id) => fleet.ensure({ name: `Glob ${id}`, userGroupId: id })));
    expect(star).toMatchObject({ userGroupId: "*", change: "create", resourceName: "default.%2A", token: serverView().get("*")!.token });
    expect(twoStars).toMatchObject({ userGroupId: "**", change: "create", resourceName: "default.%2A%2A", token: serverView().get("**")!.token });
    expect(idsRequestedSince(mark)).toEqual(new Set(GLOBS));
    expect(othersThan(GLOBS)).toEqual(before);
    // list() names each group right, with the server's token.
    const listed = await fleet.list();
    expect(listed.map((g) => g.userGroupId).sort()).toEqual([...FIRST, ...GLOBS].sort());
    for (const group of listed) {
      expect(group.resourceName).toBe(resourceNameOf({ userGroupId: group.userGroupId }));
      expect(group.token).toBe(serverView().get(group.userGroupId)!.token);
      expect(group.name).toBe(serverView().get(group.userGroupId)!.name);
    }
  });

  it("answers every group held as asked from the state, names read back right (no run)", async () => {
    const runs = fleet.engineRuns;
    const again = await Promise.all([...FIRST, ...GLOBS].map((id) => fleet.ensure({ name: FIRST.includes(id) ? `Tenant ${id}` : `Glob ${id}`, userGroupId: id })));
    expect(again.every((r) => r.change === "same")).toBe(true);
    for (const result of again) expect(result.token).toBe(serverView().get(result.userGroupId)!.token);
    expect(fleet.engineRuns).toBe(runs);
  });

  it("remove('*') deletes '*' alone, on the server and in the state", async () => {
    await fleet.signUps?.closeAll(); // the sign-ups above adopted (their requests come before the mark)
    const before = othersThan(["*"]);
    const mark = server.journal().length;
    expect(await fleet.remove("*")).toMatchObject({ userGroupId: "*", change: "delete", resourceName: "default.%2A" });
    expect(idsRequestedSince(mark)).toEqual(new Set(["*"]));
    expect(serverView().has("*")).toBe(false);
    expect(othersThan(["*"])).toEqual(before);
    expect((await fleet.list()).map((g) => g.userGroupId).sort()).toEqual([...FIRST, "**"].sort());
  });
});

describe("user-groups up --file: the same ids, and an upgrade from plain names", () => {
  /** Ids whose names the release before the encoding already had: they must keep them. */
  const SAFE: GroupSpec[] = [
    { name: "Acme", userGroupId: "acme" },
    { name: "Tenant 42", userGroupId: "tenant:42" },
    { name: "A B", userGroupId: "a b" },
    { name: "Team EU", userGroupId: "team/eu" },
    { name: "Unicode", userGroupId: "Ünïcødé" },
    { name: "Dotted", userGroupId: "default.x" },
    { name: "X", userGroupId: "x" },
    { name: "Acme test", userGroupId: "acme", profile: "testing" },
  ];
  const SYNTAX: GroupSpec[] = ["*", "**", "a::b", "%2A", "/", " "].map((id) => ({ name: `Syntax ${id}`, userGroupId: id }));
  const stackName = "upgraded";
  beforeAll(async () => {
    await server.reset(); // the fleet's groups above hold some of these ids
  });

  it("keeps every group of a stack the previous release made, adds the new ids, and a second run changes nothing", async () => {
    const repo = path.join(env.workDir, "repo");
    const options: RunOptions = runOptions(stackName, { workDir: path.join(repo, ".user-groups"), backendUrl: `file://${env.backendDir}`, envVars: engineEnv() });
    // The previous release's program: the same groups, each named `<profile or "default">.<userGroupId>` as it was.
    const { stack } = await selectStack(options, async () => {
      const groups: Record<string, unknown> = {};
      for (const spec of SAFE) {
        const name = `${spec.profile ?? "default"}.${spec.userGroupId}`;
        const group = new UserGroup(name, { name: spec.name, userGroupId: spec.userGroupId, ...(spec.profile !== undefined ? { profile: spec.profile } : {}) });
        groups[name] = { userGroupId: group.userGroupId, name: group.name, token: group.token, teamId: group.teamId, apiEnvironmentTag: group.apiEnvironmentTag };
      }
      return { groups };
    });
    const made = await stack.up();
    expect(made.summary.resourceChanges).toEqual({ create: SAFE.length + 1 }); // and the stack itself
    const oldState = groupsInState(await stack.exportStack());
    const oldTokens = new Map(oldState.map((g) => [g.resourceName, g.token]));

    const file = path.join(repo, "groups.json");
    writeFileSync(file, JSON.stringify({ groups: [...SAFE, ...SYNTAX] }));
    const cliEnv = { ...process.env, ...engineEnv(), PULUMI_BACKEND_URL: "", PULUMI_CONFIG_PASSPHRASE: PASSPHRASE };
    const cli = (...args: string[]) => runUserGroupsCli([...args, "--file", file, "--stack", stackName, "--backend-url", `file://${env.backendDir}`], { cwd: repo, env: cliEnv });

    const up = await cli("up", "--yes", "--json", "--show-secrets");
    expect(up.code, up.stderr).toBe(0);
    const report = JSON.parse(up.stdout) as { summary: Record<string, number>; groups: { resourceName: string; userGroupId: string; profile?: string; change: string; token?: string }[] };
    expect(report.summary).toEqual({ create: SYNTAX.length, update: 0, replace: 0, delete: 0, same: SAFE.length });
    for (const spec of SAFE) {
      const name = `${spec.profile ?? "default"}.${spec.userGroupId}`;
      expect(report.groups.find((g) => g.resourceName === name), name).toMatchObject({ userGroupId: spec.userGroupId, change: "same", token: oldTokens.get(name) });
    }
    for (const spec of SYNTAX) {
      const entry = report.groups.find((g) => g.userGroupId === spec.userGroupId && g.profile === undefined);
      expect(entry, spec.userGroupId).toMatchObject({ resourceName: resourceNameOf(spec), change: "create", token: serverView().get(spec.userGroupId)?.token });
    }

    // The state: every group under its own name, the old ones with their old tokens, each token the server's.
    const state = groupsInState(await stack.exportStack());
    expect(state.map((g) => g.resourceName).sort()).toEqual([...SAFE, ...SYNTAX].map((spec) => resourceNameOf(spec)).sort());
    for (const group of state) {
      expect(group.token).toBe(serverView(group.profile === "testing" ? "Testing" : "Customer").get(group.userGroupId)?.token);
      if (oldTokens.has(group.resourceName)) expect(group.token).toBe(oldTokens.get(group.resourceName));
    }

    const second = await cli("preview", "--expect-no-changes");
    expect(second.code, `${second.stdout}\n${second.stderr}`).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`0 to create, 0 to update, 0 to replace, 0 to delete, ${SAFE.length + SYNTAX.length} unchanged`));
  });
});
