// A whole-set operation over the shards of a stack: which shards it touches,
// mass deletion judged from each shard's state and declaration, a few at a
// time; each shard's run (run-shard.ts) keeps the directory true under its lease.
import type { Deployment } from "@pulumi/pulumi/automation";
import { type GroupSpec, type DeleteGuardOptions, heldGroupNames, RunOptions, Operation } from "../model";
import { assertUserStackName } from "./directory";
import { eachLimited, holdersOf, planShardDeletions, shardConcurrency, ShardedStack, type ShardPart } from "./sharded-stack";
import type { PlannedRun } from "./run-shard";
import { workspaceOf, exportIfExists } from "../engine";
import { inSpan, setSpanAttributes } from "../telemetry";

/** The root stack's groups (none when it does not exist yet), for a shard directory made now. */
async function rootHeld(options: RunOptions): Promise<string[] | undefined> {
  const deployment = await exportIfExists(options);
  return deployment === undefined ? undefined : heldGroupNames(deployment);
}

/**
 * Opens the shards of the stack of these options (shard-directory.ts). `rootHeldOf`: the groups the root stack
 * holds, for a directory made now (default: read from its state; a fleet's shard runner may answer it).
 */
export async function openShards(options: RunOptions, rootHeldOf: () => Promise<readonly string[] | undefined> = () => rootHeld(options)): Promise<ShardedStack> {
  assertUserStackName(options.stack); // before the work directory is made
  return ShardedStack.open(options, workspaceOf(options).backendUrl, rootHeldOf);
}

/**
 * Runs `work` on each shard a whole-set operation of `specs` touches, a few at
 * a time. An up or destroy of a stack with more than one shard (those the
 * directory names and those the backend holds) first reads every shard's
 * state: a group goes to the shard
 * whose state holds it, whatever the directory says; a group two states hold
 * refuses the run; mass deletion is judged from each shard's state and
 * declaration, and each shard's run gets its own guard and the directory (its
 * rule kept under the shard's lease by runShard). A preview or refresh reads
 * the directory only.
 */
export async function eachShard<T>(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  work: (run: PlannedRun) => Promise<T>,
): Promise<T[]> {
  const shards = await openShards(options);
  try {
    // Planning (which shards, each one's guard) in its span `user_groups.shards.plan`; the runs after it, a few at a time.
    const planned = await inSpan("user_groups.shards.plan", { "user_groups.operation": operation, "user_groups.stack": options.stack, "user_groups.group_count": specs.length }, async (span) => {
      const runs = await planShards(shards, operation, options, specs, guard);
      setSpanAttributes(span, () => ({ "user_groups.shard_count": runs.length }));
      return runs;
    });
    if (planned.length === 1) return [await work(planned[0]!)];
    return await eachLimited(planned, shardConcurrency(), work);
  } finally {
    await shards.close();
  }
}

/** Which shards a whole-set operation runs on, each with its guard and, for an up or destroy, the directory (see eachShard). */
async function planShards(shards: ShardedStack, operation: Operation, options: RunOptions, specs: readonly GroupSpec[], guard: DeleteGuardOptions): Promise<PlannedRun[]> {
  if (operation !== "up" && operation !== "destroy") {
    const parts = await shards.parts(specs, false);
    if (parts.length === 1) return [{ part: parts[0]!, guard, directory: undefined }];
    // A shard made by an earlier run that never got to it has no stack: a refresh has nothing there.
    const present =
      operation === "refresh" ? await eachLimited(parts, shardConcurrency(), async (part) => ((await exportIfExists(part.options)) === undefined ? undefined : part)) : parts;
    return present.filter((part): part is ShardPart => part !== undefined).map((part) => ({ part, guard, directory: undefined }));
  }
  const candidates = await shards.allShards();
  if (candidates.length === 1) {
    // One shard holds everything there is and gets everything declared: its run judges its deletions from its own
    // state and declaration (engine/run-once.ts), no read beforehand needed.
    const parts = await shards.parts(specs, operation === "up");
    if (parts.length === 1 && parts[0]!.shard === candidates[0]) return [{ part: parts[0]!, guard, directory: shards.directory }];
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
  return present.map((part) => ({ part, guard: guards.get(part.shard)!, directory: shards.directory }));
}
