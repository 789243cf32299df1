// The fleet (UserGroupFleet) against today's way of adding one group
// (provisionUserGroups of the whole list), in one run on this machine:
//   one ensure of a new group in a fleet of N, against provisionUserGroups of N+1;
//   50 concurrent ensures in a fleet of the largest N: wall time, per-call p50/p95, engine runs;
//   3 processes x 20 ensures on one stack on a throwaway PostgreSQL backend: wall time, lost groups.
// Every run of a kind alternates with the other kind, each adding one new group.
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startFakeServer, type FakeServer } from "../fake-server/index.js";
import { provisionUserGroups, type RunOptions, UserGroupFleet } from "../provider/automation/index.js";
import { selectStack } from "../provider/automation/internal.js";
import { runFleetWorker } from "../testkit/fleet-worker-run.js";
import { startPostgres } from "../testkit/postgres.js";
import { declareFloor, FLOOR_TYPE } from "./inline-floors.js";
import { median, percentile } from "./stats.js";

const KEY = "bench-fleet-key-000000000000";
const PASSPHRASE = "bench-fleet";

export interface FleetSize {
  readonly n: number;
  /** Seconds of each provisionUserGroups of N+1 (one new group among N). */
  readonly wholeSetSeconds: readonly number[];
  /** Seconds of each fleet.ensure of one new group in the same stack. */
  readonly ensureSeconds: readonly number[];
  /** Seconds of a fleet.ensure of a group the stack already holds as asked (no engine run). */
  readonly sameSeconds: readonly number[];
  /** Seconds of the shaped floor's targeted up of one new no-op resource among N (the engine's part of an ensure). */
  readonly floorOneSeconds: readonly number[];
}

export interface FleetConcurrency {
  readonly fleetSize: number;
  readonly calls: number;
  readonly wallSeconds: number;
  readonly p50Seconds: number;
  readonly p95Seconds: number;
  readonly engineRuns: number;
  /** The median single ensure at this fleet size, for the "wall <= 2x one ensure" goal. */
  readonly oneEnsureSeconds: number;
  /** The shaped floor: one targeted up of `calls` new no-op resources among `fleetSize`, and of one. */
  readonly floorWallSeconds: number;
  readonly floorOneSeconds: number;
}

export interface FleetProcesses {
  readonly processes: number;
  readonly callsPerProcess: number;
  readonly wallSeconds: number;
  readonly storedGroups: number;
  readonly heldInState: number;
  readonly lostGroups: number;
  readonly failedCalls: number;
}

export interface FleetResults {
  readonly sizes: readonly FleetSize[];
  readonly concurrency?: FleetConcurrency;
  readonly processes?: FleetProcesses;
}

const seconds = (startMs: number) => (performance.now() - startMs) / 1000;

function runOptions(server: FakeServer, workDir: string, stack: string, backendUrl?: string): RunOptions {
  return {
    stack,
    workDir,
    passphrase: PASSPHRASE,
    ...(backendUrl ? { backendUrl } : {}),
    envVars: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, PULUMI_SKIP_UPDATE_CHECK: "true" },
  };
}

/**
 * The shaped floor (docs/performance.md): a no-op dynamic resource of a
 * UserGroup's shape, its 64-character token secret. Its targeted `up` is what
 * the engine and backend charge for a fleet's run with no code of ours.
 */
const declareShaped = (ids: readonly string[]) =>
  declareFloor("floor-shaped", ids.map((id) => ({ name: `floor ${id}`, userGroupId: id, mapping: {}, adoptExisting: false })));

/** A stack of N shaped no-op resources; returns a function timing a targeted up of new ones. */
async function shapedFloor(options: RunOptions, n: number): Promise<(ids: readonly string[]) => Promise<number>> {
  const { stack } = await selectStack(options, declareShaped(groupsOf("seed", n).map((g) => g.userGroupId)));
  await stack.up();
  return async (ids) => {
    const start = performance.now();
    await stack.up({ program: declareShaped(ids), target: ids.map((id) => `urn:pulumi:${options.stack}::user-groups::${FLOOR_TYPE}::${id}`) });
    return seconds(start);
  };
}

const groupsOf = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => ({ name: `${prefix} ${i}`, userGroupId: `${prefix}-${i}` }));

async function measureSize(n: number, reps: number, workRoot: string, log: (line: string) => void): Promise<FleetSize> {
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  const workDir = path.join(workRoot, `n${n}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const options = runOptions(server, workDir, `fleet-${n}`);
  const fleet = new UserGroupFleet(options);
  const floorUp = await shapedFloor({ ...options, stack: `floor-${n}` }, n);
  try {
    const seeded = groupsOf("seed", n);
    let start = performance.now();
    await provisionUserGroups({ ...options, groups: seeded });
    log(`  N=${n}: seeded ${n} groups in ${seconds(start).toFixed(1)} s`);
    const declared = [...seeded];
    const wholeSetSeconds: number[] = [];
    const ensureSeconds: number[] = [];
    const sameSeconds: number[] = [];
    const floorOneSeconds: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      // Today's way: the whole list plus one.
      declared.push({ name: `whole ${rep}`, userGroupId: `whole-${rep}` });
      start = performance.now();
      const whole = await provisionUserGroups({ ...options, groups: declared });
      wholeSetSeconds.push(seconds(start));
      if (whole.summary.create !== 1) throw new Error(`provisionUserGroups created ${whole.summary.create}, expected 1`);
      // The fleet: one ensure of a new group.
      const spec = { name: `fleet ${rep}`, userGroupId: `fleet-${rep}` };
      start = performance.now();
      const created = await fleet.ensure(spec);
      ensureSeconds.push(seconds(start));
      if (created.change !== "create") throw new Error(`ensure answered ${created.change}, expected create`);
      declared.push(spec); // keep the next whole-set run from deleting it
      start = performance.now();
      const same = await fleet.ensure(spec);
      sameSeconds.push(seconds(start));
      if (same.change !== "same") throw new Error(`a repeated ensure answered ${same.change}, expected same`);
      floorOneSeconds.push(await floorUp([`floor-${rep}`]));
      log(
        `  N=${n} rep ${rep + 1}: provisionUserGroups of N+1 ${wholeSetSeconds.at(-1)!.toFixed(2)} s, ensure ${ensureSeconds.at(-1)!.toFixed(2)} s, ` +
          `ensure (held) ${sameSeconds.at(-1)!.toFixed(2)} s, shaped floor's targeted up ${floorOneSeconds.at(-1)!.toFixed(2)} s`,
      );
    }
    return { n, wholeSetSeconds, ensureSeconds, sameSeconds, floorOneSeconds };
  } finally {
    await fleet.close();
    await server.close();
  }
}

async function measureConcurrency(n: number, calls: number, oneEnsureSeconds: number, workRoot: string): Promise<FleetConcurrency> {
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  const workDir = path.join(workRoot, `concurrent-${n}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const options = runOptions(server, workDir, `concurrent-${n}`);
  await provisionUserGroups({ ...options, groups: groupsOf("seed", n) });
  const fleet = new UserGroupFleet(options);
  try {
    const durations: number[] = [];
    const start = performance.now();
    await Promise.all(
      groupsOf("burst", calls).map(async (spec) => {
        const callStart = performance.now();
        await fleet.ensure(spec);
        durations.push(seconds(callStart));
      }),
    );
    const wallSeconds = seconds(start);
    durations.sort((a, b) => a - b);
    const floorUp = await shapedFloor({ ...options, stack: `floor-concurrent-${n}` }, n);
    const floorOneSeconds = await floorUp(["floor-one"]);
    const floorWallSeconds = await floorUp(groupsOf("floor-burst", calls).map((g) => g.userGroupId));
    return {
      fleetSize: n,
      calls,
      wallSeconds,
      p50Seconds: percentile(durations, 0.5),
      p95Seconds: percentile(durations, 0.95),
      engineRuns: fleet.engineRuns,
      oneEnsureSeconds,
      floorWallSeconds,
      floorOneSeconds,
    };
  } finally {
    await fleet.close();
    await server.close();
  }
}

async function measureProcesses(processes: number, callsPerProcess: number, workRoot: string, repoRoot: string): Promise<FleetProcesses> {
  const postgres = await startPostgres();
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  const workDir = path.join(workRoot, "processes");
  rmSync(workDir, { recursive: true, force: true });
  try {
    const env = { ...process.env, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE, PULUMI_SKIP_UPDATE_CHECK: "true", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY };
    const worker = path.join(repoRoot, "testkit", "fleet-worker.cjs");
    const start = performance.now();
    const reports = await Promise.all(
      Array.from({ length: processes }, (_, p) =>
        runFleetWorker(
          worker,
          { stack: "customers", backendUrl: postgres.backendUrl, workDir: path.join(workDir, `p${p}`), prefix: `p${p}`, ids: groupsOf(`p${p}`, callsPerProcess).map((g) => g.userGroupId) },
          env,
          600_000,
        ),
      ),
    );
    const wallSeconds = seconds(start);
    const checker = new UserGroupFleet(runOptions(server, path.join(workDir, "checker"), "customers", postgres.backendUrl));
    const held = await checker.list();
    await checker.close();
    const asked = processes * callsPerProcess;
    const stored = server.groups().length;
    return {
      processes,
      callsPerProcess,
      wallSeconds,
      storedGroups: stored,
      heldInState: held.length,
      lostGroups: asked - Math.min(stored, held.length),
      failedCalls: reports.flatMap((r) => r.report).filter((r) => r.error !== undefined).length,
    };
  } finally {
    await server.close();
    postgres.stop();
  }
}

export async function compareFleet(
  ns: readonly number[],
  reps: (n: number) => number,
  workRoot: string,
  repoRoot: string,
  log: (line: string) => void,
): Promise<FleetResults> {
  const sizes: FleetSize[] = [];
  for (const n of ns) sizes.push(await measureSize(n, reps(n), workRoot, log));
  const largest = sizes.at(-1)!;
  log(`  50 concurrent ensures in a fleet of ${largest.n}...`);
  const concurrency = await measureConcurrency(largest.n, 50, median(largest.ensureSeconds), workRoot);
  log(`  3 processes x 20 ensures on PostgreSQL...`);
  const processes = await measureProcesses(3, 20, workRoot, repoRoot);
  return { sizes, concurrency, processes };
}
