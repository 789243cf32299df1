// Shards (docs/architecture.md, "Shards"): a stack the user names is split into
// Pulumi stacks of at most `shardSize` groups, and everything a user sees is
// still one stack: results, list, drift, recovery, the fleet. Small shard
// sizes here, so that a handful of groups spans several shards.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import {
  destroyUserGroups,
  detectDrift,
  type GroupSpec,
  previewUserGroups,
  provisionUserGroups,
  type RunOptions,
  UserGroupFleet,
} from "../../../provider/automation";
import {
  assertUserStackName,
  planAssignments,
  ReservedStackNameError,
  ShardNameError,
  shardStackName,
  shardsOf,
} from "../../../provider/automation/shards/directory";
import { eachLimited } from "../../../provider/automation/shards/sharded-stack";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "shards-customer-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("shards");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

const groupsOf = (prefix: string, count: number): GroupSpec[] => Array.from({ length: count }, (_, i) => ({ name: `${prefix} ${i}`, userGroupId: `${prefix}-${i}` }));
const tokenOf = (id: string) => server.groups().find((g) => g.user_group_id === id)?.token;

function optionsOf(stack: string, extra: Partial<RunOptions> = {}): RunOptions {
  return {
    stack,
    workDir: path.join(env.workDir, stack),
    passphrase: "shards-test",
    envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    ...extra,
  };
}

/** The Pulumi stacks a file backend holds for `stack`, and the groups each one's state records. */
function stacksOnDisk(stack: string): Map<string, string[]> {
  const dir = path.join(env.backendDir, ".pulumi", "stacks", "user-groups");
  const stacks = new Map<string, string[]>();
  if (!existsSync(dir)) return stacks;
  for (const file of readdirSync(dir).filter((f) => f === `${stack}.json` || (f.startsWith(`${stack}.shard-`) && f.endsWith(".json")))) {
    const state = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as { checkpoint: { latest?: { resources?: Array<{ urn: string; type: string }> } } };
    const groups = (state.checkpoint.latest?.resources ?? []).filter((r) => r.type.endsWith(":UserGroup")).map((r) => r.urn.split("::").at(-1)!);
    stacks.set(file.replace(/\.json$/, ""), groups.sort());
  }
  return stacks;
}

describe("shard assignment (pure)", () => {
  it("fills the lowest shard with room, keeps every known group where it is, and plans a repeat once", () => {
    const known = new Map([
      ["default.a", 0],
      ["default.b", 0],
      ["default.c", 1],
    ]);
    const counts = new Map([
      [0, 2],
      [1, 1],
    ]);
    const plan = planAssignments(known, counts, ["default.c", "default.x", "default.y", "default.x", "default.z", "default.b"], 2);
    expect([...plan]).toEqual([
      ["default.c", 1],
      ["default.x", 1],
      ["default.y", 2],
      ["default.z", 2],
      ["default.b", 0],
    ]);
    // A legacy shard 0 over the size keeps its groups; new ones go on.
    expect(planAssignments(new Map([["default.a", 0]]), new Map([[0, 900]]), ["default.n"], 500).get("default.n")).toBe(1);
    expect(shardsOf(new Map([["default.q", 3]]))).toEqual([0, 3]);
  });

  it("names shards after the stack, refuses a shard's name as a user's stack, and one too long to shard", () => {
    expect(shardStackName("prod", 0)).toBe("prod");
    expect(shardStackName("acme/prod", 7)).toBe("acme/prod.shard-7");
    expect(() => assertUserStackName("prod.shard-1")).toThrow(ReservedStackNameError);
    expect(() => assertUserStackName("org/prod.shard-12")).toThrow(ReservedStackNameError);
    expect(assertUserStackName("prod.shard-x")).toBe("prod.shard-x");
    expect(() => shardStackName("p".repeat(95), 1)).toThrow(ShardNameError);
  });

  it("eachLimited runs every item, at most `limit` at once, then throws the first failure in item order", async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const outcome = eachLimited([1, 2, 3, 4, 5], 2, async (n) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 5 * (6 - n)));
      running -= 1;
      done.push(n);
      if (n === 2 || n === 4) throw new Error(`item ${n}`);
      return n;
    });
    await expect(outcome).rejects.toThrow("item 2");
    expect(done.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });
});

describe("a sharded stack on a file backend", () => {
  it("spreads groups over shards of the given size and shows one stack: results, preview, list, drift, the fleet, deletion, destroy", async () => {
    const options = optionsOf("spread", { shardSize: 2 });
    const groups = groupsOf("spread", 5);
    const up = await provisionUserGroups({ ...options, groups });
    expect(up.stack).toBe("spread");
    expect(up.summary).toMatchObject({ create: 5, delete: 0 });
    expect(up.groups.map((g) => g.resourceName)).toEqual(groups.map((g) => `default.${g.userGroupId}`));
    for (const g of up.groups) expect(g.token).toBe(tokenOf(g.userGroupId));
    // Three Pulumi stacks of at most two groups, together holding each group once.
    const stacks = stacksOnDisk("spread");
    expect([...stacks.keys()].sort()).toEqual(["spread", "spread.shard-1", "spread.shard-2"]);
    for (const held of stacks.values()) expect(held.length).toBeLessThanOrEqual(2);
    expect([...stacks.values()].flat().sort()).toEqual(up.groups.map((g) => g.resourceName));

    const preview = await previewUserGroups({ ...options, groups });
    expect(preview.changed).toBe(false);
    expect(preview.summary.same).toBe(5);

    const fleet = new UserGroupFleet(options);
    try {
      expect((await fleet.list()).map((g) => [g.userGroupId, g.token])).toEqual(groups.map((g) => [g.userGroupId, tokenOf(g.userGroupId)]));
      // A new group goes to the shard with room (shard 2 holds one), a held one costs no run.
      // Engine runs of either path: today's targeted ups and the record-first sign-ups' adopting runs.
      const runsOf = () => fleet.engineRuns + (fleet.signUps?.adoptingRuns ?? 0);
      const runs = runsOf();
      const added = await fleet.ensure({ name: "added", userGroupId: "spread-added" });
      await fleet.signUps?.closeAll(); // answered record-first: in its shard's state once adopted
      expect(added).toMatchObject({ change: "create", token: tokenOf("spread-added") });
      expect(stacksOnDisk("spread").get("spread.shard-2")).toContain("default.spread-added");
      expect((await fleet.ensure({ name: "spread 0", userGroupId: "spread-0" })).change).toBe("same");
      expect(runsOf()).toBe(runs + 1);
      // A group of another shard is removed there, and nothing else is.
      expect((await fleet.remove("spread-3")).change).toBe("delete");
      expect(tokenOf("spread-3")).toBeUndefined();
      expect((await fleet.remove("never-held")).change).toBe("same");
    } finally {
      await fleet.close();
    }

    // Drift reads every shard: five groups, all in sync.
    const drift = await detectDrift(options);
    expect(drift).toMatchObject({ stack: "spread", checked: 5, inSync: true });

    // An up that drops groups of two shards deletes just those; groups never move between shards.
    const kept = [groups[0]!, groups[2]!, { name: "added", userGroupId: "spread-added" }];
    const before = stacksOnDisk("spread");
    const trimmed = await provisionUserGroups({ ...options, groups: kept });
    expect(trimmed.summary).toMatchObject({ delete: 2, create: 0, same: 3 });
    for (const [stack, held] of stacksOnDisk("spread")) for (const name of held) expect(before.get(stack)).toContain(name);

    const destroyed = await destroyUserGroups(options);
    expect(destroyed.summary.delete).toBe(3);
    expect(server.groups().filter((g) => g.user_group_id.startsWith("spread-"))).toEqual([]);
    expect([...stacksOnDisk("spread").values()].flat()).toEqual([]);
  }, 240_000);

  it("keeps a stack an older version made whole (no group moves or is replaced), and adds new groups to a new shard", async () => {
    const options = optionsOf("legacy");
    const groups = groupsOf("legacy", 4);
    await provisionUserGroups({ ...options, groups });
    const tokens = groups.map((g) => tokenOf(g.userGroupId));
    // The same stack with a smaller shard size than it already holds: shard 0 keeps its four.
    const sharded = { ...options, shardSize: 2 };
    expect((await previewUserGroups({ ...sharded, groups })).changed).toBe(false);
    const more = await provisionUserGroups({ ...sharded, groups: [...groups, ...groupsOf("legacy-new", 1)] });
    expect(more.summary).toMatchObject({ create: 1, update: 0, replace: 0, delete: 0, same: 4 });
    expect(groups.map((g) => tokenOf(g.userGroupId))).toEqual(tokens);
    const stacks = stacksOnDisk("legacy");
    expect(stacks.get("legacy")).toEqual(groups.map((g) => `default.${g.userGroupId}`).sort());
    expect(stacks.get("legacy.shard-1")).toEqual(["default.legacy-new-0"]);
  }, 120_000);

  it("refuses a stack name that names a shard, before any run", async () => {
    await expect(provisionUserGroups({ ...optionsOf("x"), stack: "spread.shard-1", groups: [] })).rejects.toThrow(ReservedStackNameError);
    expect(existsSync(path.join(env.workDir, "x"))).toBe(false);
  });
});

describe.skipIf(process.platform !== "linux")("a sharded fleet on PostgreSQL", () => {
  let postgres: PostgresServer;
  beforeAll(async () => {
    postgres = await startPostgres();
  }, 60_000);
  afterAll(() => postgres?.stop());

  it("two fleets of one stack agree on every group's shard, and each lists all of them", async () => {
    const options = optionsOf("pgfleet", { shardSize: 3, backendUrl: postgres.backendUrl });
    const a = new UserGroupFleet({ ...options, workDir: path.join(env.workDir, "pg-a") });
    const b = new UserGroupFleet({ ...options, workDir: path.join(env.workDir, "pg-b") });
    try {
      const asked = groupsOf("pg", 8);
      const results = await Promise.all(asked.map((spec, i) => (i % 2 === 0 ? a : b).ensure(spec)));
      for (const r of results) expect(r.token).toBe(tokenOf(r.userGroupId));
      const listed = await b.list();
      expect(listed.map((g) => g.userGroupId)).toEqual(asked.map((g) => g.userGroupId).sort());
      // Each group once on the server, and asking again anywhere changes nothing.
      expect(server.groups().filter((g) => g.user_group_id.startsWith("pg-")).length).toBe(8);
      for (const r of await Promise.all(asked.map((spec) => a.ensure(spec)))) expect(r.change).toBe("same");
    } finally {
      await a.close();
      await b.close();
    }
  }, 240_000);
});
