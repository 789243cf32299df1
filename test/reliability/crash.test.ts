// Crash consistency: a `pulumi up` creating or rotating groups is killed with
// SIGKILL (the CLI and its plugin processes), then `recoverStack` brings the
// stack back: no duplicate, no orphan, no lost token, nothing pending, nothing
// left running, preview and refresh with no changes. Three trials here, one per
// kill point (early in a create, mid-way in a sharded create whose shards run at
// once, late in a rotation); `npm run bench:crash` runs twenty, kill points
// spread over the whole run, create and rotate alternating
// (BENCH_SHARD_SIZE=4 for the sharded form). A create from an empty stack and a
// destroy run without a checkpoint per step (engine/intents.ts): the state stays
// as before the run, and the run record's intents carry what it was doing. A
// fourth trial kills a destroy mid-way; the next run, a plain up, converges.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type CrashTrialResult, describeTrial, runCrashBench } from "../../testkit/crash-trials";
import { REPO_ROOT } from "../support/pulumi-env";

describe.skipIf(process.platform !== "linux")("crash consistency (kill -9 during up)", () => {
  it("recovers from a kill early in creating 12 groups, mid-way in creating them in shards of 4 (the kill in both running shards), late in rotating them, and mid-way in destroying them", async () => {
    const workRoot = path.join(REPO_ROOT, ".work");
    // trialPlan(2, 12): a create killed once 3 groups exist, a rotation killed once 9 have their new token.
    const plain = await runCrashBench({ trials: 2, groups: 12, workRoot, onTrial: (r, i) => console.log(`crash: ${describeTrial(r, i)}`) });
    // trialPlan(1, 12): a create killed once 6 groups exist; shards of 4: two shards run at once, and the kill lands in both.
    const sharded = await runCrashBench({ trials: 1, groups: 12, shardSize: 4, workRoot, onTrial: (r, i) => console.log(`crash (shards of 4): ${describeTrial(r, i)}`) });
    // trialPlan(1, 12, ["destroy"]): a destroy of 12 killed once 6 are deleted; then an up of the same 12, then a destroy.
    const destroyed = await runCrashBench({ trials: 1, groups: 12, kinds: ["destroy"], workRoot, onTrial: (r, i) => console.log(`crash (destroy): ${describeTrial(r, i)}`) });
    const results: CrashTrialResult[] = [...plain.results, ...sharded.results, ...destroyed.results];
    expect(results.map((r) => [r.kind, r.killAt, r.shardSize ?? null])).toEqual([["create", 3, null], ["rotate", 9, null], ["create", 6, 4], ["destroy", 6, null]]);
    for (const r of results) expect(r.problems, `${r.kind} killed at ${r.killAt}${r.shardSize ? " (shards)" : ""}`).toEqual([]);
    // Every trial really killed a run in the middle, and left something to recover: pending operations in the state, or intents in the record.
    expect(results.filter((r) => r.killed)).toHaveLength(4);
    for (const r of results) expect(r.pendingCreates + r.pendingOther + r.intentsAtKill + r.removingAtKill, `${r.kind} left something`).toBeGreaterThan(0);
    // The creates from an empty stack ran without checkpoints: nothing in the state, their intents in the record, adopted from there.
    const create = plain.results[0]!;
    expect([create.recordedAtKill, create.pendingCreates, create.intentsAtKill]).toEqual([0, 0, 12]);
    expect(create.adoptedExisting).toBe(create.doneAfterKill);
    // Shards of 4, two at once: the killed shards' records hold their intents (a shard that ended first holds none).
    expect(sharded.results[0]!.intentsAtKill).toBeGreaterThan(0);
    // The rotation kept its checkpoints (a token only the state remembers).
    expect(results.find((r) => r.kind === "rotate")!.intentsAtKill).toBe(0);
    // The destroy ran without checkpoints: its state still held all 12, its record named all 12 as being deleted.
    const destroy = destroyed.results[0]!;
    expect([destroy.recordedAtKill, destroy.removingAtKill, destroy.pendingOther]).toEqual([12, 12, 0]);
    expect(destroy.removedLocks).toBe(1);
    expect(results.reduce((n, r) => n + r.survivors, 0)).toBe(0);
    // One stale lock each unsharded run left, at least one of the killed shards'.
    expect(plain.results.every((r) => r.removedLocks === 1)).toBe(true);
    expect(sharded.results[0]!.removedLocks).toBeGreaterThanOrEqual(1);
  }, 360_000);
});
