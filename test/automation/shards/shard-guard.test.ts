// Issue 32 item 4: the delete guard judges what each shard run will do, from
// that shard's state and declaration, and a directory out of step with the
// states is repaired from them, never used to delete. The attack as reported:
// the directory names another shard for a group; `provisionUserGroups({
// maxDeletes: 0 })` deleted it and created it again with a new token.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { type GroupSpec, provisionUserGroups, type RunOptions, UserGroupFleet } from "../../../provider/automation";
import { shardDirectoryFor } from "../../../provider/automation/shards/directory";
import { holdersOf, planShardDeletions, ShardDirectoryConflictError, type ShardPart } from "../../../provider/automation/shards/sharded-stack";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "shard-guard-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;
let postgres: PostgresServer;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("shard-guard");
  postgres = await startPostgres();
});
afterAll(async () => {
  await server?.close();
  postgres?.stop();
  env?.cleanup();
});

const part = (shard: number, names: string[]): ShardPart => ({ shard, options: { stack: "s" }, specs: names.map((id) => ({ name: id, userGroupId: id })) });

describe("the guard of a sharded run (pure)", () => {
  it("judges each shard's deletions from its state and declaration, across the stack, and gives each shard exactly its share", () => {
    const held = new Map([
      [0, ["default.a", "default.b"]],
      [1, ["default.c", "default.d"]],
    ]);
    const parts = [part(0, ["a", "b"]), part(1, ["d"])];
    const guards = planShardDeletions("up", "s", parts, (shard) => held.get(shard) ?? [], { maxDeletes: 1 });
    expect(guards).toEqual(new Map([[0, { allowDeleteAll: true, maxDeletes: 0 }], [1, { allowDeleteAll: true, maxDeletes: 1 }]]));
    expect(() => planShardDeletions("up", "s", parts, (shard) => held.get(shard) ?? [], { maxDeletes: 0 })).toThrow(/would delete 1 groups .*"default.c"/);
    // Every group of the stack undeclared: refused across shards unless allowDeleteAll.
    expect(() => planShardDeletions("up", "s", [part(0, []), part(1, [])], (shard) => held.get(shard) ?? [], {})).toThrow(/every group/);
    // A shard emptied while others keep theirs: allowed, and no more than that.
    expect(planShardDeletions("up", "s", [part(0, ["a", "b"]), part(1, [])], (shard) => held.get(shard) ?? [], {}).get(1)).toEqual({ allowDeleteAll: true, maxDeletes: 2 });
    // No guard asked for: the caller's options as they are.
    expect(planShardDeletions("destroy", "s", parts, (shard) => held.get(shard) ?? [], {}).get(1)).toEqual({});
    expect(planShardDeletions("destroy", "s", parts, (shard) => held.get(shard) ?? [], { maxDeletes: 4 }).get(1)).toEqual({ allowDeleteAll: true, maxDeletes: 2 });
  });

  it("refuses a group two shards' states hold", () => {
    expect(holdersOf("s", new Map([[0, ["default.a"]], [1, ["default.b"]]]))).toEqual(new Map([["default.a", 0], ["default.b", 1]]));
    expect(() => holdersOf("s", new Map([[0, ["default.a"]], [2, ["default.a"]]]))).toThrow(ShardDirectoryConflictError);
  });
});

const groupsOf = (tag: string): GroupSpec[] => ["a", "b", "c", "d"].map((id) => ({ name: `Guard ${id}`, userGroupId: `${tag}-${id}` }));
const tokenOf = (id: string) => server.groups().find((g) => g.user_group_id === id)?.token;

describe.skipIf(process.platform !== "linux").each([
  ["a file backend", () => `file://${env.backendDir}`, "file"],
  ["PostgreSQL", () => postgres.backendUrl, "pg"],
])("a directory out of step with the states, on %s", (_label, backendUrlOf, tag) => {
  it("naming another shard for a group: up with maxDeletes 0 deletes nothing, keeps the token, and repairs the directory", async () => {
    const stack = `guard-${tag}`;
    const groups = groupsOf(tag);
    const entries = (shards: number[]) => new Map(groups.map((g, i) => [`default.${g.userGroupId}`, shards[i]!]));
    const backendUrl = backendUrlOf();
    const options: RunOptions = {
      stack,
      backendUrl,
      workDir: path.join(env.workDir, stack),
      passphrase: "shard-guard",
      shardSize: 2,
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    };
    const first = await provisionUserGroups({ ...options, groups });
    expect(first.summary.create).toBe(4);
    const before = new Map(groups.map((g) => [g.userGroupId, tokenOf(g.userGroupId)]));
    const directory = shardDirectoryFor(backendUrl, "user-groups", stack);
    try {
      expect(await directory.read()).toEqual(entries([0, 0, 1, 1]));
      // The attack: the directory names shard 0 for c, which shard 1's state holds.
      await directory.repair(new Map([[`default.${tag}-c`, 0]]));
    } finally {
      await directory.close();
    }
    const deletesBefore = server.journal().filter((r) => r.method === "DELETE").length;

    const second = await provisionUserGroups({ ...options, groups, maxDeletes: 0 });
    expect(second.summary).toMatchObject({ create: 0, delete: 0, replace: 0 });
    expect(server.journal().filter((r) => r.method === "DELETE").length).toBe(deletesBefore);
    for (const g of groups) expect(tokenOf(g.userGroupId)).toBe(before.get(g.userGroupId));
    const repaired = shardDirectoryFor(backendUrl, "user-groups", stack);
    try {
      expect(await repaired.read()).toEqual(entries([0, 0, 1, 1]));
    } finally {
      await repaired.close();
    }

    // A directory that lost every entry of shard 1: list() still shows its groups and writes their entries back.
    const lost = shardDirectoryFor(backendUrl, "user-groups", stack);
    try {
      if (tag === "file") {
        const file = path.join(env.backendDir, ".user-groups", "shards", "user-groups", stack, "directory.json");
        const data = JSON.parse(readFileSync(file, "utf8")) as { groups: Record<string, number> };
        for (const name of Object.keys(data.groups)) if (data.groups[name] === 1) delete data.groups[name];
        writeFileSync(file, JSON.stringify(data));
      } else {
        const { Client } = await import("pg");
        const client = new Client({ host: "127.0.0.1", port: postgres.port, user: "postgres", database: "postgres" });
        await client.connect();
        await client.query("DELETE FROM user_groups_shard_members WHERE stack_key = $1 AND shard = 1", [`user-groups/${stack}`]);
        await client.end();
      }
      expect([...(await lost.read()).values()]).toEqual([0, 0]);
    } finally {
      await lost.close();
    }
    const fleet = new UserGroupFleet({ ...options, workDir: path.join(env.workDir, `${stack}-fleet`) });
    try {
      expect((await fleet.list()).map((g) => [g.userGroupId, g.token])).toEqual(groups.map((g) => [g.userGroupId, before.get(g.userGroupId)]));
    } finally {
      await fleet.close();
    }
    // list() wrote the missing entries back from the states.
    const relisted = shardDirectoryFor(backendUrl, "user-groups", stack);
    try {
      expect(await relisted.read()).toEqual(entries([0, 0, 1, 1]));
    } finally {
      await relisted.close();
    }
    const third = await provisionUserGroups({ ...options, groups, maxDeletes: 0 });
    expect(third.summary).toMatchObject({ create: 0, delete: 0, replace: 0 });
    for (const g of groups) expect(tokenOf(g.userGroupId)).toBe(before.get(g.userGroupId));
    const after = shardDirectoryFor(backendUrl, "user-groups", stack);
    try {
      expect(await after.read()).toEqual(entries([0, 0, 1, 1]));
    } finally {
      await after.close();
    }
  }, 300_000);
});
