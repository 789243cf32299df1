// One shard's share of a batch, ensures and removes alike: the requests the
// state answers already (F2) are answered without a run; the rest run through
// the shard pipeline (shards/run-shard.ts: lock wait, run lease, takeover, the
// directory's rule, change tracking) in targeted runs, each group's outcome
// settled on its own (fleet-isolation.ts).
import * as pulumi from "@pulumi/pulumi";
import type { Stack } from "@pulumi/pulumi/automation";
import { checkedState, declareGroup, engineRun, exportState, readStateWithSecrets, type ChangeTracker } from "../engine";
import { runShard, type ShardRunContext } from "../shards";
import { type GroupChange, type GroupResult, type GroupSpec, heldGroupNames, type RunOptions } from "../model";
import { type RunAttempt, type GroupOutcome, settleEach } from "./fleet-isolation";
import { groupsInState } from "./fleet-state";
import { FLEET_MARKER_OUTPUT } from "./fleet-stack";
import { GroupMoved, groupError, unsettledError } from "./errors";
import { answeredByState, type GroupOutputs, mergeChanges, type Request, resultOf, specOf, urnOfGroup } from "./requests";
import type { FleetShards } from "./fleet-shards";

/** What a shard's batch needs of its fleet. */
export interface BatchHost {
  readonly options: RunOptions;
  readonly lockTimeoutMs: number;
  readonly shards: FleetShards;
  /** An engine run started (UserGroupFleet.engineRuns). */
  countRun(): void;
  /** A group's outcome, for each request of the batch asking for it. */
  settle(batch: readonly Request[], resourceName: string, outcome: GroupOutcome<GroupResult>): void;
}

/** Runs one shard's requests of a batch (all of one kind); every request is answered through `host.settle` or its waiter. */
export async function runShardBatch(host: BatchHost, shard: number, batch: readonly Request[]): Promise<void> {
  const stack = (await host.shards.selected(shard)).stack;
  const held = new Map(groupsInState(checkedState(await readStateWithSecrets(stack), host.shards.stackNameOf(shard))).map((group) => [group.resourceName, group]));
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
  const { options, shards } = host;
  const stackName = shards.stackNameOf(shard);
  const operation = kind === "ensure" ? "up" : "destroy";
  const outputs = new Map<string, GroupOutputs>();
  /** Groups not run: an ensure's, claimed by another shard meanwhile; a remove's, deleted by another replica meanwhile. */
  let skipped = new Map<string, number | undefined>();
  host.countRun();
  const outcome = await runShard(
    { shard, options: { ...options, stack: stackName, lockTimeoutMs: host.lockTimeoutMs }, directory: (await shards.sharded()).directory },
    {
      operation,
      targets: [...specs.keys()],
      open: () => shards.open(shard),
      outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
      engine: async (run) => {
        outputs.clear();
        skipped = kind === "ensure" ? new Map(run.moved) : await goneMeanwhile(run.stack, specs);
        const targeted = new Map([...specs].filter(([name]) => !skipped.has(name)));
        if (targeted.size === 0) return;
        const common = targetedRun(options, stackName, targeted, run);
        if (kind === "ensure") await engineRun("up", stackName, () => run.stack.up({ program: programOf(targeted, outputs), ...common }), shard);
        else await engineRun("destroy", stackName, () => run.stack.destroy(common), shard);
      },
    },
  );
  mergeChanges(changes, outcome.tracker.changes);
  const settled = new Map<string, GroupOutcome<GroupResult>>();
  for (const [name, spec] of specs) {
    if (skipped.has(name)) {
      const other = skipped.get(name);
      settled.set(name, other !== undefined ? { ok: false, error: new GroupMoved(name, other) } : { ok: true, value: resultOf(spec, "same") });
      continue;
    }
    const result = settledResult(kind, name, spec, outcome.tracker, changes, outputs.get(name));
    if (result) settled.set(name, { ok: true, value: result });
    else if (isFailed(outcome.tracker, name)) settled.set(name, { ok: false, error: groupError(name, kind === "ensure" ? spec : undefined, outcome.tracker.diagnostics.get(name), outcome.failure?.error) });
  }
  return { settled, ...(outcome.failure ? { failure: outcome.failure } : {}) };
}

/** A group's result when the run settled it: an ensure the program saw (and did not fail), a remove the engine deleted. */
function settledResult(kind: Request["kind"], name: string, spec: GroupSpec, tracker: ChangeTracker, changes: ReadonlyMap<string, GroupChange>, got: GroupOutputs | undefined): GroupResult | undefined {
  const change = tracker.changes.get(name);
  if (kind === "ensure") return got && change !== "failed" ? resultOf(spec, changes.get(name) ?? "same", got) : undefined;
  return change === "delete" ? resultOf(spec, "delete") : undefined;
}

function isFailed(tracker: ChangeTracker, name: string): boolean {
  return tracker.changes.get(name) === "failed" || tracker.diagnostics.get(name) !== undefined;
}

/** A remove's groups another replica deleted since the state was read, read again under the lease: gone already ("same"), not targets the engine cannot find. */
async function goneMeanwhile(stack: Stack, specs: ReadonlyMap<string, GroupSpec>): Promise<Map<string, undefined>> {
  // Names only: heldGroupNames reads URNs, which an export without secrets shows as they are.
  const stillHeld = new Set(heldGroupNames(await exportState(stack)));
  return new Map([...specs.keys()].filter((name) => !stillHeld.has(name)).map((name) => [name, undefined]));
}

/** The program of an ensure's run: one group per spec, each group's outputs noted as the engine answers. */
function programOf(specs: ReadonlyMap<string, GroupSpec>, outputs: Map<string, GroupOutputs>) {
  return async () => {
    for (const [resourceName, spec] of specs) {
      const group = declareGroup(spec);
      pulumi.all([group.name, group.token, group.teamId, group.apiEnvironmentTag]).apply(([name, token, teamId, apiEnvironmentTag]) => {
        outputs.set(resourceName, { name, token, teamId, ...(apiEnvironmentTag !== undefined ? { apiEnvironmentTag } : {}) });
      });
    }
    return { [FLEET_MARKER_OUTPUT]: true };
  };
}

/** The options of an up or destroy of exactly these groups, each group's failure its own; a step outside them stops the run. */
function targetedRun(options: RunOptions, stackName: string, groups: ReadonlyMap<string, GroupSpec>, run: Pick<ShardRunContext, "tracker" | "signal">) {
  return {
    target: [...groups.keys()].map((name) => urnOfGroup(stackName, name)),
    continueOnError: true,
    onEvent: run.tracker.handle,
    // Stopped by a step outside the batch, or by losing the run lease.
    signal: run.signal ? AbortSignal.any([run.tracker.signal, run.signal]) : run.tracker.signal,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
  };
}
