// One sign-up on the record-first path (issue #44; fleet/sign-ups.ts) against
// today's ensure, at fleet sizes N (file backend, the emulator, pacing off):
//   one new group's ensure, each started once the last one's adoption is done
//   (a new lease each time: the worst case of a lone sign-up), its latency and
//   how long until the state held it (the adoption's end, from the call's start);
//   today's ensure of a new group (a targeted up) for comparison;
//   a burst of `--burst` concurrent sign-ups on one replica: wall, p50, p95, the
//   state caught up.
//
//   npm run bench:sign-up -- [--n 100,1000] [--reps 9] [--slow-reps 2] [--burst 50]
// Prints a Markdown table (docs/bench/fleet.md, "Record-first sign-ups") and the load average.
import { mkdirSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startFakeServer } from "../fake-server/index.js";
import { fastPathFleet, provisionUserGroups, type RunOptions, slowPathFleet } from "../provider/automation/internal.js";
import { median, percentile } from "./stats.js";

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

async function main(): Promise<void> {
  const ns = arg("n", "100,1000").split(",").map(Number);
  const reps = Number(arg("reps", "9"));
  const slowReps = Number(arg("slow-reps", "2"));
  const burst = Number(arg("burst", "50"));
  const workRoot = path.join(process.cwd(), ".work", "bench-sign-up");
  const before = loadavg()[0]!;
  const results: SizeResult[] = [];
  for (const n of ns) results.push(await measure(n, reps, slowReps, n === ns.at(-1) ? burst : 0, workRoot));
  const after = loadavg()[0]!;
  const lines = [
    `| N | record-first ensure answered, s: median (p95, range) | state caught up, s | today's ensure, s | repetitions |`,
    `| --- | --- | --- | --- | --- |`,
    ...results.map((r) => `| ${r.n} | ${fmt(r.fast)} | ${fmt(r.caughtUp)} | ${fmt(r.slow)} | ${r.fast.length} + ${r.slow.length} |`),
  ];
  for (const r of results) {
    if (r.burst) lines.push("", `Burst of ${r.burst.calls} concurrent sign-ups on one replica, N = ${r.n}: wall ${r.burst.wall.toFixed(2)} s, p50 ${r.burst.p50.toFixed(2)} s, p95 ${r.burst.p95.toFixed(2)} s, state caught up ${r.burst.caughtUp.toFixed(2)} s.`);
  }
  lines.push("", `Load average (1 min) ${before.toFixed(2)} before, ${after.toFixed(2)} after, on ${process.env.BENCH_MACHINE ?? "this machine"}.`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
  process.exitCode = 1;
});
