// Whole-set runs from code: provisionUserGroups, previewUserGroups,
// refreshUserGroups and destroyUserGroups declare or read a stack's whole set of
// groups, one run per shard (shards/), each through runShard (shards/run-shard.ts).
import { type GroupSpec, validateGroups, type DeleteGuardOptions, validDeleteGuard, RunResult, RunOptions, ProvisionOptions, Operation } from "../model";
import { mergeRunResults, eachShard, runPlanned } from "../shards";
import { inSpan, setSpanAttributes } from "../telemetry";

async function run(operation: Operation, options: RunOptions & DeleteGuardOptions, specs: readonly GroupSpec[]): Promise<RunResult> {
  const guard = validDeleteGuard(options);
  // provisionUserGroups & co.: the root of the shards' runs (the CLI's command span is its parent).
  return inSpan(`user_groups.provision.${operation}`, { "user_groups.operation": operation, "user_groups.stack": options.stack, "user_groups.group_count": specs.length }, async (span) => {
    const results = await eachShard(operation, options, specs, guard, (planned) => runPlanned(operation, planned));
    setSpanAttributes(span, () => ({ "user_groups.shard_count": results.length }));
    return mergeRunResults(options.stack, results);
  });
}

/**
 * `pulumi up` of the given groups: creates, updates, rotates, replaces, and deletes
 * groups no longer listed. An up that would delete every group of a non-empty stack
 * is refused unless `allowDeleteAll`; one that would delete more than `maxDeletes`
 * groups is refused (DeletionRefusedError, before any change).
 */
export async function provisionUserGroups(options: ProvisionOptions): Promise<RunResult> {
  return run("up", options, validateGroups(options.groups));
}

/**
 * What `provisionUserGroups` would change, without changing anything. Without
 * `refresh`, a stack (or shard) whose state proves that nothing would change is
 * answered from the state without running the engine (docs/automation.md, "Big
 * stacks: shards"); USER_GROUPS_PREVIEW_ENGINE=always runs the engine every time.
 */
export async function previewUserGroups(options: ProvisionOptions): Promise<RunResult> {
  return run("preview", options, validateGroups(options.groups));
}

/** Reads every managed group back into the state (out-of-band changes, deletions). */
export async function refreshUserGroups(options: RunOptions): Promise<RunResult> {
  return run("refresh", options, []);
}

/** Deletes every group of the stack (refused before any change when `maxDeletes` is given and the stack holds more). */
export async function destroyUserGroups(options: RunOptions & Pick<DeleteGuardOptions, "maxDeletes">): Promise<RunResult> {
  return run("destroy", options, []);
}
