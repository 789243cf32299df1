// One shard's share of a batch, ensures and removes alike: the requests the
// state answers already (F2) are answered without a run; the rest run in
// targeted runs through the fleet's shard runner (shard-runner.ts: the shard
// pipeline, shards/run-shard.ts, and the engine), each group's outcome settled
// on its own (fleet-isolation.ts).
import { type GroupChange, type GroupResult, type GroupSpec } from "../model";
import { type RunAttempt, type GroupOutcome, settleEach } from "./fleet-isolation";
import { GroupMoved, groupError, unsettledError } from "./errors";
import { answeredByState, mergeChanges, type Request, resultOf, specOf, type GroupOutputs } from "./requests";
import type { FleetShards } from "./fleet-shards";
import type { ShardRunner, TargetedRunOutcome } from "./shard-runner";

/** What a shard's batch needs of its fleet. */
export interface BatchHost {
  readonly shards: FleetShards;
  /** The shard's state and its runs (engineShardRunner, or a test's). */
  readonly runner: ShardRunner;
  /** An engine run started (UserGroupFleet.engineRuns). */
  countRun(): void;
  /** A group's outcome, for each request of the batch asking for it. */
  settle(batch: readonly Request[], resourceName: string, outcome: GroupOutcome<GroupResult>): void;
}

/** Runs one shard's requests of a batch (all of one kind); every request is answered through `host.settle` or its waiter. */
export async function runShardBatch(host: BatchHost, shard: number, batch: readonly Request[]): Promise<void> {
  const held = new Map((await host.runner.held(host.shards, shard)).map((group) => [group.resourceName, group]));
  const toRun = new Map<string, GroupSpec>();
  for (const request of batch) {
    const answer = answeredByState(request, held.get(request.resourceName));
    if (answer) (request.waiter as { resolve(value: GroupResult): void }).resolve(answer);
    else toRun.set(request.resourceName, specOf(request));
  }
  if (toRun.size === 0) return;
  const kind = batch[0]!.kind;
  const changes = new Map<string, GroupChange>();
  await settleEach([...toRun.keys()], (names) => runTargeted(host, shard, kind, new Map(names.map((name) => [name, toRun.get(name)!])), changes), {
    unsettledError,
    onSettled: (name, outcome) => host.settle(batch, name, outcome),
  });
}

/** One targeted run of some of the shard's groups, and what it settled. `changes`: each group's changes over the batch's runs. */
async function runTargeted(host: BatchHost, shard: number, kind: Request["kind"], specs: ReadonlyMap<string, GroupSpec>, changes: Map<string, GroupChange>): Promise<RunAttempt<GroupResult>> {
  host.countRun();
  const outcome = await host.runner.run(host.shards, shard, kind, specs);
  mergeChanges(changes, outcome.changes);
  const settled = new Map<string, GroupOutcome<GroupResult>>();
  for (const [name, spec] of specs) {
    if (outcome.skipped.has(name)) {
      const other = outcome.skipped.get(name);
      settled.set(name, other !== undefined ? { ok: false, error: new GroupMoved(name, other) } : { ok: true, value: resultOf(spec, "same") });
      continue;
    }
    const result = settledResult(kind, name, spec, outcome, changes, outcome.outputs.get(name));
    if (result) settled.set(name, { ok: true, value: result });
    else if (isFailed(outcome, name)) settled.set(name, { ok: false, error: groupError(name, kind === "ensure" ? spec : undefined, outcome.diagnostics.get(name), outcome.failure?.error) });
  }
  return { settled, ...(outcome.failure ? { failure: outcome.failure } : {}) };
}

/** A group's result when the run settled it: an ensure the program saw (and did not fail), a remove the engine deleted. */
function settledResult(kind: Request["kind"], name: string, spec: GroupSpec, run: TargetedRunOutcome, changes: ReadonlyMap<string, GroupChange>, got: GroupOutputs | undefined): GroupResult | undefined {
  const change = run.changes.get(name);
  if (kind === "ensure") return got && change !== "failed" ? resultOf(spec, changes.get(name) ?? "same", got) : undefined;
  return change === "delete" ? resultOf(spec, "delete") : undefined;
}

function isFailed(run: TargetedRunOutcome, name: string): boolean {
  return run.changes.get(name) === "failed" || run.diagnostics.get(name) !== undefined;
}
