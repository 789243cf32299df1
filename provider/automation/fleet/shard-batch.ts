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
import type { SignUps } from "./sign-ups";

/** What a shard's batch needs of its fleet. */
export interface BatchHost {
  readonly shards: FleetShards;
  /** The shard's state and its runs (engineShardRunner, or a test's). */
  readonly runner: ShardRunner;
  /** An engine run started (UserGroupFleet.engineRuns). */
  countRun(): void;
  /** A group's outcome, for each request of the batch asking for it. */
  settle(batch: readonly Request[], resourceName: string, outcome: GroupOutcome<GroupResult>): void;
  /** Record-first sign-ups (sign-ups.ts), when the fleet has them. */
  readonly signUps?: SignUps;
  /** Requests the sign-ups sent back, asked again on today's path (a later batch). */
  readonly slowOnly?: WeakSet<Request>;
  askSlow?(requests: readonly Request[]): void;
  /** Requests handed to the sign-ups: answered there, whatever becomes of the rest of their batch. */
  readonly handedOver?: WeakSet<Request>;
}

/** Runs one shard's requests of a batch (all of one kind); every request is answered through `host.settle` or its waiter. */
export async function runShardBatch(host: BatchHost, shard: number, batch: readonly Request[]): Promise<void> {
  const { signUps } = host;
  const kind = batch[0]!.kind;
  // A remove of a group signed up here and not yet adopted: once its adoption is done (the state holds it), as today.
  if (signUps && kind === "remove" && batch.some((request) => signUps.pending(request.resourceName))) await signUps.idle(shard);
  const held = new Map((await host.runner.held(host.shards, shard)).map((group) => [group.resourceName, group]));
  const toRun = new Map<string, GroupSpec>();
  const newGroups = new Map<string, GroupSpec>();
  for (const request of batch) {
    const heldGroup = held.get(request.resourceName);
    const answer = signUps && request.kind === "ensure" && !heldGroup ? signUps.answeredAsAsked(request.resourceName, request.spec) : answeredByState(request, heldGroup);
    if (answer && !(signUps && request.kind === "remove")) (request.waiter as { resolve(value: GroupResult): void }).resolve(answer);
    // With sign-ups, a remove is never answered "same" from a read made without the lease: another replica may hold the group
    // in its record (not yet adopted); the destroy's lease (its holder adopts first) and its read under it tell.
    else if (signUps && request.kind === "ensure" && !heldGroup && !signUps.pending(request.resourceName) && !host.slowOnly?.has(request)) newGroups.set(request.resourceName, request.spec);
    else toRun.set(request.resourceName, specOf(request));
  }
  // Handed to the shard's sign-up session, not awaited: the next batch's new groups join the same session, even while it
  // still waits for the lease (issue #44 item 2); what it sends back is asked again on today's path (host.askSlow).
  if (signUps && newGroups.size > 0) signUpAll(host, signUps, shard, batch, newGroups);
  if (toRun.size === 0) return;
  // The slow path waits for this shard's sign-ups to be adopted and their lease let go (no lock wait against ourselves).
  if (signUps) {
    await signUps.idle(shard);
    signUps.forget(toRun.keys());
  }
  const changes = new Map<string, GroupChange>();
  await settleEach([...toRun.keys()], (names) => runTargeted(host, shard, kind, new Map(names.map((name) => [name, toRun.get(name)!])), changes), {
    unsettledError,
    onSettled: (name, outcome) => host.settle(batch, name, outcome),
  });
}

/** Signs up the batch's new groups of the shard (record-first): each answered through `host.settle`, or asked again on today's path. */
function signUpAll(host: BatchHost, signUps: SignUps, shard: number, batch: readonly Request[], specs: ReadonlyMap<string, GroupSpec>): void {
  for (const request of batch) if (specs.has(request.resourceName)) host.handedOver?.add(request);
  signUps.submit(
    shard,
    [...specs].map(([resourceName, spec]) => ({
      resourceName,
      spec,
      settle: (outcome) => host.settle(batch, resourceName, outcome),
      fallBack: () => host.askSlow?.(batch.filter((request) => request.resourceName === resourceName)),
    })),
  );
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
