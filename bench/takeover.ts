// Takeover of a killed replica (CONTRACT F7, issue 25): time from the SIGKILL of
// a replica's whole process group, mid-run at a random point, to the next
// sign-up the other replica serves; and whether every sign-up was served once
// with the server's token (the trial: test/support/takeover-trial.ts).
//   npm run bench -- --only takeover        (5 kills on PostgreSQL, 1 on a file backend)
//   BENCH_TAKEOVER_KILLS=10 BENCH_TAKEOVER_SEED=7 to change the kills and their points.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { startFakeServer } from "../fake-server/index.js";
import { seededRandom } from "../fake-server/faults.js";
import { startPostgres } from "../testkit/postgres.js";
import { describeTakeoverTrial, killPoints, runTakeoverTrial, type TakeoverTrialResult } from "../testkit/takeover-trial.js";
import { median } from "./stats.js";

const KEY = "bench-takeover-key-0000000001";

export interface TakeoverKill {
  readonly backend: "postgres" | "file";
  readonly groups: number;
  readonly killAt: number;
  readonly result: TakeoverTrialResult;
}

export interface TakeoverResults {
  readonly kills: readonly TakeoverKill[];
  /** Seconds from kill to the next served sign-up: median and worst, over every kill. */
  readonly firstServedMedianSeconds: number;
  readonly firstServedMaxSeconds: number;
  /** The same for the next new sign-up (one that needs the takeover and an engine run). */
  readonly firstNewServedMedianSeconds: number;
  readonly firstNewServedMaxSeconds: number;
  readonly allServedMaxSeconds: number;
  readonly orphansGoneMaxSeconds: number;
  readonly consistent: number;
}

export async function measureTakeover(kills: number, seed: number, workRoot: string, repoRoot: string, log: (line: string) => void): Promise<TakeoverResults> {
  mkdirSync(workRoot, { recursive: true });
  const root = mkdtempSync(path.join(workRoot, "takeover-"));
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], journalSize: 100_000 });
  const postgres = await startPostgres();
  const worker = path.join(repoRoot, "testkit", "fleet-worker.cjs");
  const env = {
    PULUMI_CONFIG_PASSPHRASE: "bench-takeover",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_HOME: path.join(root, "pulumi-home"),
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: KEY,
  };
  const groups = 8;
  const random = seededRandom(seed);
  const plan: Array<{ backend: "postgres" | "file"; killAt: number }> = [
    ...killPoints(kills, groups, random).map((killAt) => ({ backend: "postgres" as const, killAt })),
    { backend: "file", killAt: 1 + Math.floor(random() * (groups - 1)) },
  ];
  const done: TakeoverKill[] = [];
  try {
    for (const [i, { backend, killAt }] of plan.entries()) {
      await server.reset();
      const label = `k${i}`;
      // A fresh stack per kill; on PostgreSQL the same database (and so the same tables) throughout.
      const backendUrl = backend === "postgres" ? postgres.backendUrl : `file://${mkdtempSync(path.join(root, "state-"))}`;
      const result = await runTakeoverTrial({
        server,
        backendUrl,
        workRoot: root,
        stack: `signups-${label}`,
        worker,
        env,
        ids: Array.from({ length: groups }, (_, j) => `${label}-a-${j}`),
        newIds: [`${label}-b-0`, `${label}-b-1`],
        killAt,
        // A random part of the delay too, so the kill lands at different points of a request.
        delayMs: 800 + Math.floor(random() * 1_200),
        label,
      });
      done.push({ backend, groups, killAt, result });
      log(`kill ${i + 1} (${backend}, ${groups} sign-ups, kill at ${killAt}): ${describeTakeoverTrial(result)}`);
    }
  } finally {
    await server.close();
    postgres.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const first = done.map((k) => k.result.firstServedMs / 1000);
  const firstNew = done.map((k) => k.result.firstNewServedMs / 1000);
  return {
    kills: done,
    firstServedMedianSeconds: median(first),
    firstServedMaxSeconds: Math.max(...first),
    firstNewServedMedianSeconds: median(firstNew),
    firstNewServedMaxSeconds: Math.max(...firstNew),
    allServedMaxSeconds: Math.max(...done.map((k) => k.result.allServedMs / 1000)),
    orphansGoneMaxSeconds: Math.max(...done.map((k) => k.result.orphansGoneMs / 1000)),
    consistent: done.filter((k) => k.result.problems.length === 0).length,
  };
}

export function takeoverMarkdown(results: TakeoverResults): string {
  const rows = results.kills.map(
    (k, i) =>
      `| ${i + 1} | ${k.backend} | ${k.killAt} of ${k.groups} | ${k.result.createdAtKill} | ${(k.result.firstServedMs / 1000).toFixed(1)} | ${(k.result.firstNewServedMs / 1000).toFixed(1)} | ${(k.result.allServedMs / 1000).toFixed(1)} | ` +
      `${k.result.orphans} / ${(k.result.orphansGoneMs / 1000).toFixed(1)} s | ${k.result.takeovers.flatMap((t) => t.adopted).length} | ${k.result.problems.length === 0 ? "yes" : k.result.problems.join("; ")} |`,
  );
  return [
    "| kill | backend | kill point | created at kill | next sign-up served (s after kill) | next new sign-up served (s) | all served (s) | provider processes left / gone after | adopted | consistent |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Next sign-up served after the kill: median ${results.firstServedMedianSeconds.toFixed(1)} s, worst ${results.firstServedMaxSeconds.toFixed(1)} s ` +
      `(goal: 60 s); next new sign-up (after the takeover): median ${results.firstNewServedMedianSeconds.toFixed(1)} s, worst ${results.firstNewServedMaxSeconds.toFixed(1)} s; all served within ${results.allServedMaxSeconds.toFixed(1)} s; the killed run's provider processes gone within ` +
      `${results.orphansGoneMaxSeconds.toFixed(1)} s; ${results.consistent} of ${results.kills.length} kills consistent.`,
  ].join("\n");
}
