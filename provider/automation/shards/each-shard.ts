// A whole-set operation over the shards of a stack: which shards it touches,
// mass deletion judged from each shard's state and declaration, a few at a
// time, and the directory kept true under each shard's run lease.
import type { Deployment } from "@pulumi/pulumi/automation";
import { type GroupSpec, type DeleteGuardOptions, heldGroupNames, resourceNameOf, RunResult, RunOptions, Operation } from "../model";
import { assertUserStackName, type ShardDirectory } from "./directory";
import { eachLimited, holdersOf, planShardDeletions, shardConcurrency, ShardDirectoryConflictError, ShardedStack, type ShardPart } from "./sharded-stack";
import { workspaceOf, exportIfExists, type LeasedRunHooks } from "../engine";
import { inSpan, setSpanAttributes } from "../lease";

/** One shard's run as planned: its part, its deletion guard, the directory's hooks. */
interface PlannedRun {
  readonly part: ShardPart;
  readonly guard: DeleteGuardOptions;
  readonly hooks: LeasedRunHooks;
}

/** The root stack's groups (none when it does not exist yet), for a shard directory made now. */
async function rootHeld(options: RunOptions): Promise<string[] | undefined> {
  const deployment = await exportIfExists(options);
  return deployment === undefined ? undefined : heldGroupNames(deployment);
}

/** Opens the shards of the stack of these options (shard-directory.ts). */
export async function openShards(options: RunOptions): Promise<ShardedStack> {
  assertUserStackName(options.stack); // before the work directory is made
  return ShardedStack.open(options, workspaceOf(options).backendUrl, () => rootHeld(options));
}

/**
 * What a run of one shard does under that shard's run lease (directory.ts, the
 * rule): before it, from the state as read under the lease, the entries of the
 * groups the state holds name this shard (the state is the truth), and the
 * groups the run may create are claimed for it (one a concurrent run put in
 * another shard meanwhile refuses the run); after it, the entries of this
 * shard's groups the run deleted, and of those the state did not hold and the
 * run did not create, are dropped.
 */
export function directoryHooks(directory: ShardDirectory, stackName: string, shard: number, declared: readonly string[]): LeasedRunHooks {
  let stale: string[] = [];
  return {
    before: async (state: Deployment) => {
      const held = heldGroupNames(state);
      const holding = new Set(held);
      const mine = await directory.entriesOf(shard);
      const mineSet = new Set(mine);
      await directory.repair(new Map(held.filter((name) => !mineSet.has(name)).map((name) => [name, shard])));
      const wanted = declared.filter((name) => !holding.has(name));
      const elsewhere = await directory.claim(wanted, shard);
      if (elsewhere.size > 0) throw new ShardDirectoryConflictError(stackName, [...elsewhere.keys()].sort(), "a concurrent run put these groups in another shard meanwhile; run again");
      const creating = new Set(wanted);
      stale = mine.filter((name) => !holding.has(name) && !creating.has(name));
    },
    after: async (result: RunResult) => {
      const deleted = result.groups.filter((group) => group.change === "delete").map((group) => group.resourceName);
      await directory.forget([...new Set([...stale, ...deleted])], shard);
    },
  };
}

/**
 * Runs `work` on each shard a whole-set operation of `specs` touches, a few at
 * a time. An up or destroy of a stack with more than one shard (those the
 * directory names and those the backend holds) first reads every shard's
 * state: a group goes to the shard
 * whose state holds it, whatever the directory says; a group two states hold
 * refuses the run; mass deletion is judged from each shard's state and
 * declaration, and each shard's run gets its own guard and the directory's
 * hooks (run under its lease). A preview or refresh reads the directory only.
 */
export async function eachShard<T>(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  work: (part: ShardPart, shardGuard: DeleteGuardOptions, hooks: LeasedRunHooks) => Promise<T>,
): Promise<T[]> {
  const shards = await openShards(options);
  try {
    // Planning (which shards, each one's guard) in its span `user_groups.shards.plan`; the runs after it, a few at a time.
    const planned = await inSpan("user_groups.shards.plan", { "user_groups.operation": operation, "user_groups.stack": options.stack, "user_groups.group_count": specs.length }, async (span) => {
      const runs = await planShards(shards, operation, options, specs, guard);
      setSpanAttributes(span, () => ({ "user_groups.shard_count": runs.length }));
      return runs;
    });
    if (planned.length === 1) return [await work(planned[0]!.part, planned[0]!.guard, planned[0]!.hooks)];
    return await eachLimited(planned, shardConcurrency(), (run) => work(run.part, run.guard, run.hooks));
  } finally {
    await shards.close();
  }
}

/** Which shards a whole-set operation runs on, each with its guard and hooks (see eachShard). */
async function planShards(shards: ShardedStack, operation: Operation, options: RunOptions, specs: readonly GroupSpec[], guard: DeleteGuardOptions): Promise<PlannedRun[]> {
  if (operation !== "up" && operation !== "destroy") {
    const parts = await shards.parts(specs, false);
    if (parts.length === 1) return [{ part: parts[0]!, guard, hooks: {} }];
    // A shard made by an earlier run that never got to it has no stack: a refresh has nothing there.
    const present =
      operation === "refresh" ? await eachLimited(parts, shardConcurrency(), async (part) => ((await exportIfExists(part.options)) === undefined ? undefined : part)) : parts;
    return present.filter((part): part is ShardPart => part !== undefined).map((part) => ({ part, guard, hooks: {} }));
  }
  const candidates = await shards.allShards();
  const hooksOf = (part: ShardPart) => directoryHooks(shards.directory, options.stack, part.shard, part.specs.map(resourceNameOf));
  if (candidates.length === 1) {
    // One shard holds everything there is and gets everything declared: its run judges its deletions from its own
    // state and declaration (engine/run-once.ts), no read beforehand needed.
    const parts = await shards.parts(specs, operation === "up");
    if (parts.length === 1 && parts[0]!.shard === candidates[0]) return [{ part: parts[0]!, guard, hooks: hooksOf(parts[0]!) }];
  }
  const states = new Map<number, Deployment | undefined>(
    await eachLimited(candidates, shardConcurrency(), async (shard) => [shard, await exportIfExists(shards.optionsOf(shard))] as const),
  );
  const heldByShard = new Map([...states].map(([shard, deployment]) => [shard, deployment === undefined ? [] : heldGroupNames(deployment)]));
  const holders = holdersOf(options.stack, heldByShard);
  const withGroups = [...heldByShard].filter(([, names]) => names.length > 0).map(([shard]) => shard);
  const parts = await shards.parts(specs, operation === "up", holders, withGroups);
  const guards = planShardDeletions(operation, options.stack, parts, (shard) => heldByShard.get(shard) ?? [], guard);
  // A shard made by an earlier run that never got to it has no stack: a destroy has nothing there.
  const present = operation === "destroy" ? parts.filter((part) => states.get(part.shard) !== undefined) : parts;
  return present.map((part) => ({ part, guard: guards.get(part.shard)!, hooks: hooksOf(part) }));
}
