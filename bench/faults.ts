// Fault histories, longer than npm test's (issue 32 items 6-7): for each backend
// and each fault kind (testkit/jepsen/fault-kinds.ts, those npm test leaves out
// included), a history of three replicas calling ensure/remove/list on colliding
// ids (removes from any replica) with the fault injected while r1 holds the
// stack, and a fourth replica's fresh sign-up (the probe) at the fault's start;
// reported per kind: valid or not, time to serve again (the first call another
// replica got served by an engine run, and the probe) from the fault's start and
// from r1's last lease renewal, groups lost, doubled, orphaned, directory
// entries wrong, tokens that differ from the service's, failures not retryable
// or whose retry failed, calls never answered. This is the long form: one
// history a kind, 6 ids, 10 s of load before the fault and 20 s after, a pause or
// black hole held a fixed 45 s; npm test's short form (test/jepsen/) runs its kinds
// as rounds of one history a backend, 4 ids, 3 s before and after each fault
// (docs/reliability.md, "Faults as Jepsen injects them").
//   npm run bench -- --only faults
//   BENCH_FAULTS=postgres:pause,file:slow-disk,s3:kill    only these (s3: moto's server, started here)
//   BENCH_FAULTS_SEED=7  BENCH_FAULTS_HOLD_MS=45000  (how long a pause or partition lasts)
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { startFakeServer } from "../fake-server/index.js";
import { startPostgres } from "../testkit/postgres.js";
import { type Backend, FAULT_KINDS, type FaultKind, NOT_IN_NPM_TEST } from "../testkit/jepsen/fault-kinds.js";
import { describeHistory, fromRenewal, runHistory } from "../testkit/jepsen/run-history.js";
import { startToxiproxy } from "../testkit/jepsen/toxiproxy.js";
import { type ObjectStore, startS3 } from "../testkit/object-stores/index.js";

const KEY = "bench-faults-key-0000000001";

export interface FaultRow {
  readonly backend: Backend;
  readonly fault: FaultKind;
  /** Why npm test leaves this kind out (empty: it runs there). */
  readonly notInNpmTest: string;
  readonly faultHeldMs: number;
  readonly calls: number;
  readonly ok: number;
  readonly failed: number;
  readonly unanswered: number;
  readonly timeToServeMs: number | null;
  readonly probeServedMs: number | null;
  /** r1's last lease renewal, ms before the fault's start (null: it held none, or the fault is not r1's). */
  readonly lastRenewalBeforeMs: number | null;
  /** The same times counted from that renewal (from the fault's start when it is unknown). */
  readonly servedFromRenewalMs: number | null;
  readonly probeFromRenewalMs: number | null;
  readonly lost: number;
  readonly notRemoved: number;
  readonly doubled: number;
  readonly orphaned: number;
  readonly directory: number;
  readonly tokensDiffering: number;
  readonly failuresNotRetryable: number;
  readonly valid: boolean;
  readonly problems: readonly string[];
  readonly durationMs: number;
}

const HOLD: Partial<Record<FaultKind, number>> = { "partition-reset": 15_000, "partition-refuse": 15_000, "slow-disk": 15_000 };

export async function measureFaults(workRoot: string, repoRoot: string, log: (line: string) => void): Promise<{ seed: number; rows: FaultRow[] }> {
  mkdirSync(workRoot, { recursive: true });
  const root = mkdtempSync(path.join(workRoot, "faults-"));
  const seed = Number(process.env["BENCH_FAULTS_SEED"] ?? String(Date.now() % 100_000));
  const longHold = Number(process.env["BENCH_FAULTS_HOLD_MS"] ?? "45000");
  const only = process.env["BENCH_FAULTS"]?.split(",").map((s) => s.trim());
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], journalSize: 100_000 });
  const postgres = await startPostgres();
  const toxiproxy = await startToxiproxy();
  const worker = path.join(repoRoot, "testkit", "jepsen", "replica-worker.cjs");
  const env = {
    PULUMI_CONFIG_PASSPHRASE: "bench-faults",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_HOME: path.join(root, "pulumi-home"),
    PATH: process.env["PATH"] ?? "",
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: KEY,
  };
  const rows: FaultRow[] = [];
  const backends = ["postgres", "file", "s3"] as const;
  // moto's S3 server only when an S3 history is asked for; its credentials in the environment only (the checker's reads too).
  let s3: ObjectStore | undefined;
  try {
    if (FAULT_KINDS.s3.some((fault) => !only || only.includes(`s3:${fault}`))) {
      s3 = await startS3();
      Object.assign(env, s3.env);
      Object.assign(process.env, s3.env);
    }
    for (const backend of backends) {
      for (const fault of FAULT_KINDS[backend]) {
        if (only && !only.includes(`${backend}:${fault}`)) continue;
        await server.reset();
        let backendUrl: string;
        if (backend === "s3") {
          const bucket = `bench-faults-${rows.length}`;
          await s3!.createBucket(bucket);
          backendUrl = s3!.backendUrl(bucket);
        } else backendUrl = backend === "postgres" ? postgres.backendUrl : `file://${mkdtempSync(path.join(root, "state-"))}`;
        const key = `${backend}:${fault}` as const;
        const faultHeldMs = fault === "kill" || fault === "pg-restart" || fault === "store-restart" || fault === "none" || fault === "race" ? 0 : (HOLD[fault] ?? longHold);
        const result = await runHistory({
          label: `b${rows.length}-${backend === "postgres" ? "pg" : backend}-${fault}`,
          backend,
          fault,
          server,
          backendUrl,
          ...(backend === "postgres" ? { postgres } : {}),
          ...(backend === "s3" ? { storeAddress: /endpoint=([^&]+)/.exec(backendUrl)![1]! } : {}),
          toxiproxy,
          workRoot: root,
          worker,
          env,
          ids: Array.from({ length: 6 }, (_, i) => `b${rows.length}-g${i}`),
          ...(fault === "race" || fault === "none" ? { shardSize: 3 } : {}),
          removeFrom: "any",
          warmupMs: 10_000,
          faultMs: faultHeldMs,
          afterMs: 20_000,
          ...(fault === "stall-node" ? { holdDelayMs: faultHeldMs } : {}),
          seed: seed + rows.length,
          log,
        });
        const v = result.verdict;
        rows.push({
          backend,
          fault,
          notInNpmTest: NOT_IN_NPM_TEST.get(key) ?? "",
          faultHeldMs,
          calls: result.ops.length,
          ok: v.counts.ok,
          failed: v.counts.fail,
          unanswered: v.counts.info,
          timeToServeMs: result.timeToServeMs ?? null,
          probeServedMs: result.probeServedMs ?? null,
          lastRenewalBeforeMs: result.lastRenewalBeforeMs ?? null,
          servedFromRenewalMs: fromRenewal(result, result.timeToServeMs) ?? null,
          probeFromRenewalMs: fromRenewal(result, result.probeServedMs) ?? null,
          lost: v.lost.length,
          notRemoved: v.kept.length,
          doubled: v.doubled.length,
          orphaned: v.orphaned.length,
          directory: v.directory.length,
          tokensDiffering: v.tokens.length,
          failuresNotRetryable: v.failures.filter((f) => f.includes("is not retryable")).length,
          valid: v.counts !== undefined && result.problems.length === 0,
          problems: result.problems.slice(0, 20),
          durationMs: result.durationMs,
        });
        log(describeHistory(result));
      }
    }
  } finally {
    await s3?.stop();
    await toxiproxy.stop();
    await server.close();
    postgres.stop();
    rmSync(root, { recursive: true, force: true });
  }
  return { seed, rows };
}

const noFault = (r: FaultRow) => r.fault === "none" || r.fault === "race";
const seconds = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)}`);

export function faultsMarkdown(results: { seed: number; rows: readonly FaultRow[] }): string {
  const lines = [
    `Seed ${results.seed} (BENCH_FAULTS_SEED). Three replicas, 6 colliding ids (removes from any replica), one stack (shards of 3 for none and race); the fault lands while r1 is in an engine run. ` +
      "\"served again\": to the first call another replica got served by an engine run (a create or a delete); " +
      "\"probe\": a fresh create a fourth replica with no other load asked for at the fault's start. Each from the fault's start and from r1's last lease renewal (\"renewal\"; for a PostgreSQL restart, and a slow disk where r1 goes on renewing, from the fault). " +
      "A pause or partition that lasts longer than 30 s tests issue 32's bound (another replica serves within 30 s of the last renewal).",
    "",
    "| backend | fault | held (s) | npm test | calls (ok / failed / unanswered) | served again (s): fault / renewal | probe (s): fault / renewal | lost | not removed | doubled | orphaned | directory | tokens differing | failures not retryable | verdict |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...results.rows.map(
      (r) =>
        `| ${r.backend} | ${r.fault} | ${(r.faultHeldMs / 1000).toFixed(0)} | ${r.notInNpmTest ? "no" : "yes"} | ${r.calls} (${r.ok} / ${r.failed} / ${r.unanswered}) | ${noFault(r) ? "-" : `${seconds(r.timeToServeMs)} / ${seconds(r.servedFromRenewalMs)}`} | ${noFault(r) ? "-" : `${seconds(r.probeServedMs)} / ${seconds(r.probeFromRenewalMs)}`} | ` +
        `${r.lost} | ${r.notRemoved} | ${r.doubled} | ${r.orphaned} | ${r.directory} | ${r.tokensDiffering} | ${r.failuresNotRetryable} | ${r.valid ? "valid" : "INVALID"} |`,
    ),
  ];
  const out = results.rows.filter((r) => r.notInNpmTest);
  if (out.length > 0) {
    lines.push("", "Not in `npm test` (testkit/jepsen/fault-kinds.ts):", "");
    for (const r of out) lines.push(`- ${r.backend} ${r.fault}: ${r.notInNpmTest}`);
  }
  const invalid = results.rows.filter((r) => !r.valid);
  if (invalid.length > 0) {
    lines.push("", "Problems found (first lines):", "");
    for (const r of invalid) lines.push(`- ${r.backend} ${r.fault}: ${r.problems.slice(0, 4).map((p) => p.slice(0, 300)).join(" / ")}`);
  }
  return lines.join("\n");
}
