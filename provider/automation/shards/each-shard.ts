// A whole-set operation over the shards of a stack: which shards it touches,
// mass deletion judged across them, a few at a time.
import type { Deployment } from "@pulumi/pulumi/automation";
import { type GroupSpec, type DeleteGuardOptions, heldGroupNames, RunResult, RunOptions, Operation } from "../model";
import { assertUserStackName } from "./directory";
import { assertShardDeletionsAllowed, eachLimited, shardConcurrency, ShardedStack, type ShardPart } from "./sharded-stack";
import { workspaceOf, exportIfExists } from "../engine";

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
 * Runs `work` on each shard a whole-set operation of `specs` touches, a few at
 * a time (an up first writes the new groups' shards). Mass deletion is judged
 * across all shards before any run; each shard's run then gets `shardGuard`.
 * Groups an up or destroy deleted leave the directory.
 */
export async function eachShard<T>(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  work: (part: ShardPart, shardGuard: DeleteGuardOptions) => Promise<T>,
  runOf: (result: T) => RunResult = (result) => result as RunResult,
): Promise<T[]> {
  const shards = await openShards(options);
  try {
    const parts = await shards.parts(specs, operation === "up");
    const settle = async (part: ShardPart, shardGuard: DeleteGuardOptions): Promise<T> => {
      const result = await work(part, shardGuard);
      if (operation === "up" || operation === "destroy") await shards.directory.forget(runOf(result).groups.filter((g) => g.change === "delete").map((g) => g.resourceName));
      return result;
    };
    if (parts.length === 1) return [await settle(parts[0]!, guard)];
    // Each shard's state read at most once, for the delete guard and to skip shards that were never made.
    const states = new Map<number, Promise<Deployment | undefined>>();
    const stateOf = (part: ShardPart) => {
      if (!states.has(part.shard)) states.set(part.shard, exportIfExists(part.options));
      return states.get(part.shard)!;
    };
    await assertShardDeletionsAllowed(operation, options.stack, parts, guard, stateOf);
    // A shard made by an earlier run that never got to it has no stack: a destroy or refresh has nothing there.
    const present = operation === "destroy" || operation === "refresh" ? await eachLimited(parts, shardConcurrency(), async (part) => ((await stateOf(part)) === undefined ? undefined : part)) : parts;
    return await eachLimited(
      present.filter((part): part is ShardPart => part !== undefined),
      shardConcurrency(),
      (part) => settle(part, { allowDeleteAll: true }),
    );
  } finally {
    await shards.close();
  }
}
