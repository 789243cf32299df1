// One sign-up on the record-first path (issue #44; fleet/sign-ups.ts) against
// today's ensure, at fleet sizes N (file backend, the emulator, pacing off):
//   one new group's ensure, each started once the last one's adoption is done
//   (a new lease each time: the worst case of a lone sign-up), its latency and
//   how long until the state held it (the adoption's end, from the call's start);
//   today's ensure of a new group (a targeted up) for comparison;
//   a burst of `--burst` concurrent sign-ups on one replica: wall, p50, p95, the
//   state caught up.
//
//   a burst of `--burst` sign-ups spread over `--replicas` fleets (3) on one
//   PostgreSQL backend (`--pg-n` groups, 100; 0 leaves it out): each replica warm
//   and measured alone first (one sign-up), then the burst, each call's latency
//   against one sign-up's median.
//
//   npm run bench:sign-up -- [--n 100,1000] [--reps 9] [--slow-reps 2] [--burst 50] [--replicas 3] [--pg-n 100]
// Prints a Markdown table (docs/bench/fleet.md, "Record-first sign-ups") and the load average.
import { mkdirSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startFakeServer } from "../fake-server/index.js";
import { fastPathFleet, provisionUserGroups, type RunOptions, slowPathFleet } from "../provider/automation/internal.js";
import { median, percentile } from "./stats.js";
import { startPostgres } from "../testkit/postgres.js";

const KEY = "bench-sign-up-key-00000000000";
const seconds = (startMs: number) => (performance.now() - startMs) / 1000;

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

interface SizeResult {
  readonly n: number;
  readonly fast: number[];
  readonly caughtUp: number[];
  readonly slow: number[];
  readonly burst?: { wall: number; p50: number; p95: number; caughtUp: number; calls: number };
}

const fmt = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? "-" : `${median(sorted).toFixed(2)} (p95 ${percentile(sorted, 0.95).toFixed(2)}, ${sorted[0]!.toFixed(2)}-${sorted.at(-1)!.toFixed(2)})`;
};

async function measure(n: number, reps: number, slowReps: number, burst: number, workRoot: string): Promise<SizeResult> {
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  const workDir = path.join(workRoot, `n${n}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const options: RunOptions = {
    stack: `signups-${n}`,
    workDir,
    passphrase: "bench-sign-up",
    envVars: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, USER_GROUPS_RATE_LIMIT: "off", PULUMI_SKIP_UPDATE_CHECK: "true" },
  };
  try {
    let start = performance.now();
    await provisionUserGroups({ ...options, groups: Array.from({ length: n }, (_, i) => ({ name: `seed ${i}`, userGroupId: `seed-${i}` })) });
    console.error(`N=${n}: seeded in ${seconds(start).toFixed(1)} s`);
    const fast = fastPathFleet({ ...options, workDir: path.join(workDir, "fast"), lockTimeoutMs: 120_000 });
    const fastSeconds: number[] = [];
    const caughtUp: number[] = [];
    // A first call opens the fleet's shards (selects the stacks once per fleet): not a sign-up's cost.
    await fast.list();
    for (let rep = 0; rep < reps; rep++) {
      start = performance.now();
      const got = await fast.ensure({ name: `fast ${rep}`, userGroupId: `fast-${rep}` });
      fastSeconds.push(seconds(start));
      if (got.change !== "create") throw new Error(`ensure answered ${got.change}`);
      await fast.signUps!.closeAll();
      caughtUp.push(seconds(start));
      console.error(`N=${n} rep ${rep + 1}: answered ${fastSeconds.at(-1)!.toFixed(2)} s, state caught up ${caughtUp.at(-1)!.toFixed(2)} s`);
    }
    let burstResult: SizeResult["burst"];
    if (burst > 0) {
      const durations: number[] = [];
      start = performance.now();
      await Promise.all(
        Array.from({ length: burst }, async (_, i) => {
          const callStart = performance.now();
          await fast.ensure({ name: `burst ${i}`, userGroupId: `burst-${i}` });
          durations.push(seconds(callStart));
        }),
      );
      const wall = seconds(start);
      await fast.signUps!.closeAll();
      durations.sort((a, b) => a - b);
      burstResult = { wall, p50: percentile(durations, 0.5), p95: percentile(durations, 0.95), caughtUp: seconds(start), calls: burst };
      console.error(`N=${n} burst of ${burst}: wall ${wall.toFixed(2)} s, p50 ${burstResult.p50.toFixed(2)}, p95 ${burstResult.p95.toFixed(2)}, state caught up ${burstResult.caughtUp.toFixed(2)} s`);
    }
    await fast.close();
    const slow = slowPathFleet({ ...options, workDir: path.join(workDir, "slow"), lockTimeoutMs: 120_000 });
    await slow.list();
    const slowSeconds: number[] = [];
    for (let rep = 0; rep < slowReps; rep++) {
      start = performance.now();
      await slow.ensure({ name: `slow ${rep}`, userGroupId: `slow-${rep}` });
      slowSeconds.push(seconds(start));
      console.error(`N=${n} today's ensure ${slowSeconds.at(-1)!.toFixed(2)} s`);
    }
    await slow.close();
    return { n, fast: fastSeconds, caughtUp, slow: slowSeconds, ...(burstResult ? { burst: burstResult } : {}) };
  } finally {
    await server.close();
  }
}

interface ReplicaBurst {
  readonly n: number;
  readonly replicas: number;
  readonly one: number[];
  readonly calls: number;
  readonly wall: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  readonly caughtUp: number;
}

/** A burst spread over several replicas (fleets of one stack) on PostgreSQL, against one sign-up on the same replicas. */
async function measureReplicas(n: number, replicas: number, burst: number, workRoot: string): Promise<ReplicaBurst> {
  const postgres = await startPostgres();
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  const workDir = path.join(workRoot, `pg-n${n}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const options: RunOptions = {
    stack: `signups-pg-${n}`,
    workDir,
    backendUrl: postgres.backendUrl,
    passphrase: "bench-sign-up",
    envVars: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, USER_GROUPS_RATE_LIMIT: "off", PULUMI_SKIP_UPDATE_CHECK: "true" },
  };
  const fleets = Array.from({ length: replicas }, (_, r) => fastPathFleet({ ...options, workDir: path.join(workDir, `r${r}`), lockTimeoutMs: 120_000 }));
  try {
    let start = performance.now();
    await provisionUserGroups({ ...options, groups: Array.from({ length: n }, (_, i) => ({ name: `seed ${i}`, userGroupId: `seed-${i}` })) });
    console.error(`PostgreSQL N=${n}: seeded in ${seconds(start).toFixed(1)} s`);
    for (const fleet of fleets) await fleet.list();
    const one: number[] = [];
    for (const [r, fleet] of fleets.entries()) {
      for (let rep = 0; rep < 2; rep++) {
        start = performance.now();
        await fleet.ensure({ name: `one ${r} ${rep}`, userGroupId: `one-${r}-${rep}` });
        one.push(seconds(start));
        await fleet.signUps!.closeAll();
        console.error(`PostgreSQL N=${n} replica ${r}: one sign-up ${one.at(-1)!.toFixed(2)} s`);
      }
    }
    const durations: number[] = [];
    start = performance.now();
    await Promise.all(
      Array.from({ length: burst }, async (_, i) => {
        const callStart = performance.now();
        await fleets[i % replicas]!.ensure({ name: `burst ${i}`, userGroupId: `burst-${i}` });
        durations.push(seconds(callStart));
      }),
    );
    const wall = seconds(start);
    for (const fleet of fleets) await fleet.signUps!.closeAll();
    durations.sort((a, b) => a - b);
    const result = { n, replicas, one, calls: burst, wall, p50: percentile(durations, 0.5), p95: percentile(durations, 0.95), max: durations.at(-1)!, caughtUp: seconds(start) };
    console.error(`PostgreSQL N=${n} burst of ${burst} over ${replicas} replicas: wall ${wall.toFixed(2)} s, p50 ${result.p50.toFixed(2)}, p95 ${result.p95.toFixed(2)}, max ${result.max.toFixed(2)}, caught up ${result.caughtUp.toFixed(2)} s`);
    return result;
  } finally {
    for (const fleet of fleets) await fleet.close().catch(() => undefined);
    await server.close();
    postgres.stop();
  }
}

/** Goals of issue #44: one sign-up (items 1) and a burst against one sign-up (item 2). */
export const SIGN_UP_GOALS = { medianSeconds: 0.5, p95Seconds: 1, burstVsOne: 2 } as const;

export interface SignUpSettings {
  readonly ns: readonly number[];
  readonly reps: number;
  readonly slowReps: number;
  readonly burst: number;
  readonly replicas: number;
  readonly pgN: number;
}

export interface SignUpResults {
  readonly sizes: SizeResult[];
  readonly spread?: ReplicaBurst;
  readonly load: readonly [number, number];
}

/** Every measure of this bench: one sign-up per size, the burst on one replica (largest N), the burst over replicas on PostgreSQL. */
export async function measureSignUps(settings: SignUpSettings, workRoot: string): Promise<SignUpResults> {
  const before = loadavg()[0]!;
  const sizes: SizeResult[] = [];
  for (const n of settings.ns) if (n > 0) sizes.push(await measure(n, settings.reps, settings.slowReps, n === settings.ns.at(-1) ? settings.burst : 0, workRoot));
  const spread = settings.pgN > 0 && settings.burst > 0 ? await measureReplicas(settings.pgN, settings.replicas, settings.burst, workRoot) : undefined;
  return { sizes, ...(spread ? { spread } : {}), load: [before, loadavg()[0]!] };
}

const mark = (ok: boolean) => (ok ? "✓" : "✗");

/** The results as Markdown, each figure against its goal (docs/bench/fleet.md, "Record-first sign-ups"). */
export function signUpsMarkdown(results: SignUpResults): string {
  const { sizes, spread, load } = results;
  const lines = [
    `| N | record-first ensure answered, s: median (p95, range) | goal: median <= ${SIGN_UP_GOALS.medianSeconds} s, p95 <= ${SIGN_UP_GOALS.p95Seconds} s | state caught up, s | engine-run ensure, s | repetitions |`,
    `| --- | --- | --- | --- | --- | --- |`,
    ...sizes.map((r) => {
      const sorted = [...r.fast].sort((a, b) => a - b);
      const ok = sorted.length > 0 && median(sorted) <= SIGN_UP_GOALS.medianSeconds && percentile(sorted, 0.95) <= SIGN_UP_GOALS.p95Seconds;
      return `| ${r.n} | ${fmt(r.fast)} | ${mark(ok)} | ${fmt(r.caughtUp)} | ${fmt(r.slow)} | ${r.fast.length} + ${r.slow.length} |`;
    }),
  ];
  for (const r of sizes) {
    if (!r.burst) continue;
    const one = median([...r.fast].sort((a, b) => a - b));
    const ratio = r.burst.p95 / one;
    lines.push(
      "",
      `Burst of ${r.burst.calls} concurrent sign-ups on one replica, N = ${r.n}: wall ${r.burst.wall.toFixed(2)} s, p50 ${r.burst.p50.toFixed(2)} s, p95 ${r.burst.p95.toFixed(2)} s ` +
        `(**${ratio.toFixed(2)}x** one sign-up's median ${mark(ratio <= SIGN_UP_GOALS.burstVsOne)}, goal ${SIGN_UP_GOALS.burstVsOne}x), state caught up ${r.burst.caughtUp.toFixed(2)} s.`,
    );
  }
  if (spread) {
    const one = median([...spread.one].sort((a, b) => a - b));
    const ratio = spread.max / one;
    lines.push(
      "",
      `Burst of ${spread.calls} sign-ups spread over ${spread.replicas} replicas (fleets of one stack, one process) on PostgreSQL, N = ${spread.n}: ` +
        `one sign-up ${one.toFixed(2)} s (median of ${spread.one.length}); burst p50 ${spread.p50.toFixed(2)} s, p95 ${spread.p95.toFixed(2)} s, slowest ${spread.max.toFixed(2)} s ` +
        `(**${ratio.toFixed(2)}x** one sign-up ${mark(ratio <= SIGN_UP_GOALS.burstVsOne)}, goal ${SIGN_UP_GOALS.burstVsOne}x), wall ${spread.wall.toFixed(2)} s, state caught up ${spread.caughtUp.toFixed(2)} s.`,
    );
  }
  lines.push("", `Load average (1 min) ${load[0].toFixed(2)} before, ${load[1].toFixed(2)} after, on ${process.env.BENCH_MACHINE ?? "this machine"}.`);
  return lines.join("\n");
}

async function main(): Promise<void> {
  const settings: SignUpSettings = {
    ns: arg("n", "100,1000").split(",").map(Number),
    reps: Number(arg("reps", "9")),
    slowReps: Number(arg("slow-reps", "2")),
    burst: Number(arg("burst", "50")),
    replicas: Number(arg("replicas", "3")),
    pgN: Number(arg("pg-n", "100")),
  };
  const results = await measureSignUps(settings, path.join(process.cwd(), ".work", "bench-sign-up"));
  process.stdout.write(`${signUpsMarkdown(results)}\n`);
}

// Run as a script (npm run bench:sign-up); bench/run.ts imports the measures.
if (process.argv[1] !== undefined && path.basename(process.argv[1]) === "sign-up.js") {
  main().catch((error: unknown) => {
    process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
    process.exitCode = 1;
  });
}
