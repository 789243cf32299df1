// What the two fleet-races files share (issue 32 item 3, "linearizable per group"):
// a fake server, a PostgreSQL and a file backend, fleets of one stack as replicas,
// and the checker: the service, the shard states and the directory agree, a retried
// ensure returns the service's token, list() shows the group, and remove removes it.
// Two files so that vitest runs them side by side: fleet-races.test.ts (the forced
// interleaving) and fleet-races-timed.test.ts (as reported, and as two processes).
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { Client } from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { heldGroupNames } from "../../../provider/automation/model";
import { UserGroupFleet, type RunOptions } from "../../../provider/automation";
import { shardDirectoryFor, shardStackName } from "../../../provider/automation/shards/directory";
import type { ShardedStack } from "../../../provider/automation/shards";
import { postgresTarget } from "../../../provider/backends/postgres/target";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "fleet-races-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;
let postgres: PostgresServer;

/** Starts the file's fake server, PostgreSQL and Pulumi surroundings (call once, at the top of a test file). */
export function useRaceBed(name: string): void {
  beforeAll(async () => {
    server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
    env = createPulumiTestEnv(name);
    postgres = await startPostgres();
  });
  afterAll(async () => {
    await server?.close();
    postgres?.stop();
    env?.cleanup();
  });
}

export const serviceGroup = (id: string) => server.groups().find((g) => g.user_group_id === id);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function optionsOf(stack: string, backendUrl: string, replica: string): RunOptions & { lockTimeoutMs: number } {
  return {
    stack,
    backendUrl,
    workDir: path.join(env.workDir, `${stack}-${replica}`),
    passphrase: "fleet-races",
    shardSize: 1,
    lockTimeoutMs: 60_000,
    envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  };
}

/** The directory a fleet uses (its private handle: the test steers one replica's timing through it). */
export function directoryOf(fleet: UserGroupFleet): Promise<ShardedStack> {
  return (fleet as unknown as { fleetShards: { sharded(): Promise<ShardedStack> } }).fleetShards.sharded();
}

/**
 * A stack's checkpoint as the backend stores it (Pulumi's own file or row, read directly: no engine process, and the
 * checker does not go through the code it checks), as an exported deployment; undefined when the stack has none.
 */
async function storedDeployment(backendUrl: string, stackName: string): Promise<{ version: number; deployment: unknown } | undefined> {
  const key = `.pulumi/stacks/user-groups/${stackName}.json`;
  let bytes: Buffer | undefined;
  if (backendUrl.startsWith("file://")) {
    const file = path.join(new URL(backendUrl).pathname, key);
    bytes = existsSync(file) ? readFileSync(file) : undefined;
  } else {
    // Pulumi's diy backend files every key under the URL's path (the database name): `postgres/.pulumi/...`.
    const { pulumiTable, keyPrefix } = postgresTarget(backendUrl);
    const client = new Client({ connectionString: backendUrl });
    await client.connect();
    try {
      const exists = await client.query("SELECT to_regclass($1) AS t", [pulumiTable]);
      const rows = exists.rows[0]?.t === null ? [] : (await client.query<{ data: { data?: string } }>(`SELECT data FROM ${pulumiTable} WHERE key = $1`, [`${keyPrefix}${key}`])).rows;
      bytes = rows[0] ? Buffer.from(String(rows[0].data?.data ?? ""), "base64") : undefined;
    } finally {
      await client.end();
    }
  }
  if (bytes === undefined) return undefined;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  const stored = JSON.parse(bytes.toString("utf8")) as { version: number; checkpoint?: { latest?: unknown } };
  return { version: stored.version, deployment: stored.checkpoint?.latest ?? {} };
}

/** Each shard's groups by its stored state, and the directory's entries, for shards 0..3. */
async function observed(stack: string, backendUrl: string): Promise<{ states: Map<string, number>; directory: Map<string, number> }> {
  const states = new Map<string, number>();
  let stored = 0;
  for (let shard = 0; shard < 4; shard++) {
    const deployment = await storedDeployment(backendUrl, shardStackName(stack, shard));
    if (deployment) stored++;
    for (const name of deployment ? heldGroupNames(deployment as Parameters<typeof heldGroupNames>[0]) : []) {
      expect(states.has(name), `${name} held by two shards`).toBe(false);
      states.set(name, shard);
    }
  }
  // The anchor's shard and the race's have a state: a reader that finds none would prove nothing.
  expect(stored, "shard states found").toBeGreaterThanOrEqual(2);
  const directory = shardDirectoryFor(backendUrl, "user-groups", stack);
  try {
    return { states, directory: await directory.read() };
  } finally {
    await directory.close();
  }
}

/** The checker: the service, the states and the directory agree on race-x; then ensure, list and remove behave. */
export async function checkAgreement(stack: string, backendUrl: string, id: string): Promise<void> {
  const name = `default.${id}`;
  const { states, directory } = await observed(stack, backendUrl);
  expect(states.has(name)).toBe(serviceGroup(id) !== undefined);
  for (const [held, shard] of states) expect(directory.get(held), `directory entry of ${held}`).toBe(shard);

  const checker = new UserGroupFleet(optionsOf(stack, backendUrl, "checker"));
  try {
    const listed = await checker.list();
    if (serviceGroup(id)) expect(listed.find((g) => g.userGroupId === id)?.token).toBe(serviceGroup(id)!.token);
    else expect(listed.some((g) => g.userGroupId === id)).toBe(false);
    const again = await checker.ensure({ name: `Race ${id}`, userGroupId: id });
    expect(again.token).toBe(serviceGroup(id)!.token);
    expect((await checker.list()).find((g) => g.userGroupId === id)?.token).toBe(serviceGroup(id)!.token);
    expect(await checker.remove(id)).toMatchObject({ change: "delete" });
    expect(serviceGroup(id)).toBeUndefined();
    expect((await checker.list()).some((g) => g.userGroupId === id)).toBe(false);
    const after = await observed(stack, backendUrl);
    expect(after.states.has(name)).toBe(false);
  } finally {
    await checker.close();
  }
}

export const backends: [string, () => string][] = [
  ["PostgreSQL", () => postgres.backendUrl],
  ["a file backend", () => `file://${env.backendDir}`],
];

export interface RaceOutcome {
  op: string;
  id: string;
  at: number;
  started: number;
  ended: number;
  change?: string;
  token?: string;
  listed?: boolean;
  error?: string;
  code?: string;
}

/** One replica as its own OS process (testkit/fleet-race-worker.cjs) running a timed history of calls. */
export function raceReplica(stack: string, backendUrl: string, replica: string, startAt: number, ops: { at: number; op: string; id: string }[]): Promise<RaceOutcome[]> {
  const job = { stack, backendUrl, workDir: path.join(env.workDir, `${stack}-${replica}`), shardSize: 1, startAt, ops };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(__dirname, "../../../testkit/fleet-race-worker.cjs")],
      {
        env: { ...process.env, ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "fleet-races", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, FLEET_RACE_JOB: JSON.stringify(job) },
        timeout: 240_000,
        maxBuffer: 1 << 22,
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`replica ${replica} failed: ${stderr}`));
        else resolve((JSON.parse(stdout) as { outcomes: RaceOutcome[] }).outcomes);
      },
    );
  });
}


/** The PostgreSQL backend's URL (started by useRaceBed). */
export const postgresUrl = (): string => postgres.backendUrl;
