// Issue 32 item 3, "linearizable per group": replica 1 removes a group while
// replica 2 ensures it again, the reported interleaving (replica 2 reads the
// group's directory entry before replica 1's remove has finished, and runs
// after its destroy). Two UserGroupFleets of one stack in one process, each
// with its own directory handle, run leases and stacks, as two replicas have,
// on PostgreSQL and on a file backend; shards of one group. Afterwards the
// service, the shard states and the directory must agree, a retried ensure
// returns the service's token, list() shows the group, and remove removes it.
import { execFile } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("fleet-races");
  postgres = await startPostgres();
});
afterAll(async () => {
  await server?.close();
  postgres?.stop();
  env?.cleanup();
});

const serviceGroup = (id: string) => server.groups().find((g) => g.user_group_id === id);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function optionsOf(stack: string, backendUrl: string, replica: string): RunOptions & { lockTimeoutMs: number } {
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
function directoryOf(fleet: UserGroupFleet): Promise<ShardedStack> {
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
async function checkAgreement(stack: string, backendUrl: string, id: string): Promise<void> {
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

const backends: [string, () => string][] = [
  ["PostgreSQL", () => postgres.backendUrl],
  ["a file backend", () => `file://${env.backendDir}`],
];

describe.skipIf(process.platform !== "linux").each(backends)("a remove racing an ensure of one group, on %s", (label, backendUrlOf) => {
  it("replica 2 reads the entry before replica 1's remove finished and runs after its destroy: nothing orphaned", async () => {
    const backendUrl = backendUrlOf();
    const stack = `forced-${label === "PostgreSQL" ? "pg" : "file"}`;
    const id = `race-x-${stack}`;
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: `anchor-${stack}` }); // shard 0
      await setup.ensure({ name: `Race ${id}`, userGroupId: id }); // shard 1, alone
    } finally {
      await setup.close();
    }
    const r1 = new UserGroupFleet(optionsOf(stack, backendUrl, "r1"));
    const r2 = new UserGroupFleet(optionsOf(stack, backendUrl, "r2"));
    try {
      // Replica 2's directory tells when it has read the entry; replica 1's forget waits for that.
      const dir2 = (await directoryOf(r2)).directory;
      let entryRead!: () => void;
      const read = new Promise<void>((resolve) => (entryRead = resolve));
      const assign = dir2.assign.bind(dir2);
      dir2.assign = async (...args) => {
        const answer = await assign(...args);
        entryRead();
        return answer;
      };
      const dir1 = (await directoryOf(r1)).directory;
      const forget = dir1.forget.bind(dir1);
      let started!: (ensured: Promise<{ change: string; token: string }>) => void;
      const ensuring = new Promise<Promise<{ change: string; token: string }>>((resolve) => (started = resolve));
      let once = false;
      dir1.forget = async (...args) => {
        if (!once) {
          once = true;
          started(r2.ensure({ name: `Race ${id}`, userGroupId: id }));
          await read;
          await sleep(300);
        }
        return forget(...args);
      };
      const removed = await r1.remove(id);
      expect(removed.change).toBe("delete");
      const again = await (await ensuring);
      expect(again.change).toBe("create");
      expect(again.token).toBe(serviceGroup(id)?.token);
    } finally {
      await r1.close();
      await r2.close();
    }
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);

  it("as reported: replica 1 removes, 1.5 s later replica 2 ensures", async () => {
    const backendUrl = backendUrlOf();
    const stack = `timed-${label === "PostgreSQL" ? "pg" : "file"}`;
    const id = `race-x-${stack}`;
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: `anchor-${stack}` });
      await setup.ensure({ name: `Race ${id}`, userGroupId: id });
    } finally {
      await setup.close();
    }
    const r1 = new UserGroupFleet(optionsOf(stack, backendUrl, "r1"));
    const r2 = new UserGroupFleet(optionsOf(stack, backendUrl, "r2"));
    try {
      const removed = r1.remove(id);
      await sleep(1500);
      const ensured = await r2.ensure({ name: `Race ${id}`, userGroupId: id });
      expect((await removed).change).toBe("delete");
      // Either order is linearizable; whichever it was, the token handed out was the service's then.
      if (serviceGroup(id)) expect(ensured.token).toBe(serviceGroup(id)!.token);
    } finally {
      await r1.close();
      await r2.close();
    }
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});

interface RaceOutcome {
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
function raceReplica(stack: string, backendUrl: string, replica: string, startAt: number, ops: { at: number; op: string; id: string }[]): Promise<RaceOutcome[]> {
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

describe.skipIf(process.platform !== "linux")("two replica processes on PostgreSQL", () => {
  it("replica 1 removes, 1.5 s later replica 2 ensures, then each does the other: the service, states and directory agree", async () => {
    const backendUrl = postgres.backendUrl;
    const stack = "processes";
    const id = "race-x-processes";
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: "anchor-processes" });
      await setup.ensure({ name: `Race ${id}`, userGroupId: id });
    } finally {
      await setup.close();
    }
    const startAt = Date.now() + 5_000; // both processes loaded by then
    const [one, two] = await Promise.all([
      raceReplica(stack, backendUrl, "p1", startAt, [
        { at: 0, op: "remove", id },
        { at: 9_000, op: "ensure", id },
      ]),
      raceReplica(stack, backendUrl, "p2", startAt, [
        { at: 1_500, op: "ensure", id },
        { at: 9_500, op: "remove", id },
        { at: 12_000, op: "list", id },
      ]),
    ]);
    const history = [...one!, ...two!].sort((a, b) => a.started - b.started);
    console.log(`fleet-races processes: ${JSON.stringify(history.map(({ token: _t, ...rest }) => rest))}`);
    // Every call succeeded (none had to be retried), and every token handed out was the service's at the time it was
    // handed out: the one the service holds now, or one of a group removed after it.
    for (const outcome of history) expect(outcome.error, `${outcome.op} at ${outcome.at}`).toBeUndefined();
    expect(one![0]!.change).toBe("delete");
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});
