// What the two fleet-races files share (issue 32 item 3, "linearizable per group"):
// a fake server, a PostgreSQL and a file backend, fleets of one stack as replicas,
// and the checker: the service, the shard states and the directory agree, a retried
// ensure returns the service's token, list() shows the group, and remove removes it.
// Two files so that vitest runs them side by side: fleet-races.test.ts (the forced
// interleaving) and fleet-races-timed.test.ts (as reported, and as two processes).
import { execFile } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { heldGroupNames } from "../../../provider/automation/model";
import { exportIfExists } from "../../../provider/automation/engine";
import { UserGroupFleet, type RunOptions } from "../../../provider/automation";
import { shardDirectoryFor, shardStackName } from "../../../provider/automation/shards/directory";
import type { ShardedStack } from "../../../provider/automation/shards";
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
  return (fleet as unknown as { shards(): Promise<ShardedStack> }).shards();
}

/** Each shard's groups by its state, and the directory's entries, for shards 0..3. */
async function observed(stack: string, backendUrl: string): Promise<{ states: Map<string, number>; directory: Map<string, number> }> {
  const states = new Map<string, number>();
  for (let shard = 0; shard < 4; shard++) {
    const deployment = await exportIfExists({ ...optionsOf(stack, backendUrl, "checker"), stack: shardStackName(stack, shard) });
    for (const name of deployment ? heldGroupNames(deployment) : []) {
      expect(states.has(name), `${name} held by two shards`).toBe(false);
      states.set(name, shard);
    }
  }
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
