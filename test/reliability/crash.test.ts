// Crash consistency: a `pulumi up` creating or rotating groups is killed with
// SIGKILL (the CLI and its plugin processes), then `recoverStack` brings the
// stack back: no duplicate, no orphan, no lost token, nothing pending, nothing
// left running, preview and refresh with no changes. Three trials here (kill
// points spread, create and rotate); `npm run bench:crash` runs twenty.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { describeTrial, runCrashBench } from "../../testkit/crash-trials";
import { REPO_ROOT } from "../support/pulumi-env";

describe.skipIf(process.platform !== "linux")("crash consistency (kill -9 during up)", () => {
  it("recovers from a kill at three points of creating or rotating 12 groups", async () => {
    const summary = await runCrashBench({
      trials: 3,
      groups: 12,
      workRoot: path.join(REPO_ROOT, ".work"),
      onTrial: (r, i) => console.log(`crash: ${describeTrial(r, i)}`),
    });
    for (const r of summary.results) expect(r.problems, `${r.kind} killed at ${r.killAt}`).toEqual([]);
    // Every trial really killed a run in the middle, and left something to recover.
    expect(summary.killed).toBe(3);
    expect(summary.withPendingOperations).toBeGreaterThanOrEqual(2);
    expect(summary.neededAdoption).toBeGreaterThan(0);
    expect(summary.survivors).toBe(0);
    expect(summary.results.every((r) => r.removedLocks === 1)).toBe(true);
  }, 180_000);

  it("recovers a sharded stack whose shards were killed mid-run together", async () => {
    // 12 groups in shards of 4: two shards run at once, and the kill lands in both.
    const summary = await runCrashBench({
      trials: 1,
      groups: 12,
      shardSize: 4,
      workRoot: path.join(REPO_ROOT, ".work"),
      onTrial: (r, i) => console.log(`crash (shards of 4): ${describeTrial(r, i)}`),
    });
    const [trial] = summary.results;
    expect(trial!.problems).toEqual([]);
    expect(summary.killed).toBe(1);
    expect(trial!.removedLocks).toBeGreaterThanOrEqual(1);
    expect(summary.survivors).toBe(0);
  }, 180_000);
});
