// Runs over the shards of one stack (shard-directory.ts says which stack holds
// which group): a whole-set run becomes one run per shard, a few at a time,
// each with Pulumi's own checkpoints and lock and our run lease, so crash
// safety is per shard exactly what it is for one stack; the results are merged
// back into one, named by the stack the user gave.
import { availableParallelism } from "node:os";
import { type GroupSpec, resourceNameOf, assertDeletionsAllowed, type DeleteGuardOptions, type GroupResult, type RunOptions, type RunResult, type RunSummary } from "../model";
import { UserGroupsError } from "../../wire/errors";
import { countsOf, planAssignments, type ShardDirectory, shardDirectoryFor, shardsOf, shardStackName, validShardSize, assertUserStackName } from "./directory";
import { PROJECT_NAME } from "../engine";

/** The profile's knob (bench/shard-profile.ts): how many shards run at once, a whole number from 1 to 16. */
export const SHARD_CONCURRENCY_ENV = "USER_GROUPS_SHARD_CONCURRENCY";

/** How many shards run at once: the engine, its program and provider each take a core's worth. */
export function shardConcurrency(env: NodeJS.ProcessEnv = process.env): number {
  const asked = env[SHARD_CONCURRENCY_ENV];
  if (asked !== undefined && /^\d{1,2}$/.test(asked) && Number(asked) >= 1 && Number(asked) <= 16) return Number(asked);
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** Runs `work` over `items`, at most `limit` at once; every item is run, then the first failure (in item order) is thrown. */
export async function eachLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const outcomes: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      try {
        outcomes[at] = { status: "fulfilled", value: await work(items[at]!) };
      } catch (reason) {
        outcomes[at] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
  if (failed) throw failed.reason;
  return outcomes.map((o) => (o as PromiseFulfilledResult<R>).value);
}

/** One shard's part of a run: its Pulumi stack's options and the groups it declares. */
export interface ShardPart {
  readonly shard: number;
  readonly options: RunOptions;
  readonly specs: readonly GroupSpec[];
}

/**
 * A stack as shards: its directory (initialized from the root stack's state
 * the first time), and the options of each shard's Pulumi stack.
 */
export class ShardedStack {
  private constructor(
    readonly options: RunOptions,
    readonly directory: ShardDirectory,
    readonly shardSize: number,
  ) {}

  /**
   * Opens the stack's directory. `rootHeld` reads the groups the root stack
   * holds, for a directory made now (a stack of an older version keeps them in shard 0).
   */
  static async open(options: RunOptions, backendUrl: string, rootHeld: () => Promise<readonly string[] | undefined>): Promise<ShardedStack> {
    assertUserStackName(options.stack);
    const shardSize = validShardSize(options.shardSize);
    const directory = shardDirectoryFor(backendUrl, PROJECT_NAME, options.stack);
    try {
      await directory.initialize(rootHeld);
    } catch (error) {
      await directory.close();
      throw error;
    }
    return new ShardedStack(options, directory, shardSize);
  }

  /** The options of shard `shard`'s Pulumi stack. */
  optionsOf(shard: number): RunOptions {
    return shard === 0 ? this.options : { ...this.options, stack: shardStackName(this.options.stack, shard) };
  }

  /**
   * The shards a whole-set run of `specs` touches (every shard holding a group,
   * and those the new groups go to), each with its groups. `assign` writes the
   * new groups' shards (an up); a preview only plans them. `held` (a group ->
   * the shard whose state holds it) wins over the directory, and `alsoShards`
   * are touched even when the directory names none of their groups.
   */
  async parts(specs: readonly GroupSpec[], assign: boolean, held: ReadonlyMap<string, number> = new Map(), alsoShards: readonly number[] = []): Promise<ShardPart[]> {
    const names = specs.map(resourceNameOf);
    let known = new Map([...(await this.directory.read()), ...held]);
    let plan: Map<string, number>;
    if (assign) {
      plan = await this.directory.assign(
        names.filter((name) => !held.has(name)),
        this.shardSize,
      );
      for (const name of names) if (held.has(name)) plan.set(name, held.get(name)!);
      known = new Map([...known, ...plan]);
    } else {
      plan = planAssignments(known, countsOf(known), names, this.shardSize);
    }
    const touched = [...new Set([...shardsOf(new Map([...known, ...plan])), ...alsoShards])].sort((a, b) => a - b);
    const byShard = new Map<number, GroupSpec[]>(touched.map((shard) => [shard, []]));
    for (const spec of specs) byShard.get(plan.get(resourceNameOf(spec))!)!.push(spec);
    return [...byShard].sort(([a], [b]) => a - b).map(([shard, shardSpecs]) => ({ shard, options: this.optionsOf(shard), specs: shardSpecs }));
  }

  /** Every shard that may hold a group: those the directory names, shard 0, and those whose stack exists in the backend. */
  async allShards(): Promise<number[]> {
    const [known, existing] = await Promise.all([this.directory.read(), this.directory.existingShards()]);
    return [...new Set([...shardsOf(known), ...existing])].sort((a, b) => a - b);
  }

  close(): Promise<void> {
    return this.directory.close();
  }
}

/**
 * Two shards' states hold one group, or a run found the directory changed
 * under it: refused before any change, so that neither copy is deleted by a
 * run that believed the other.
 */
export class ShardDirectoryConflictError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly resourceNames: readonly string[],
    detail: string,
  ) {
    super("shard_directory_conflict", `Stack "${stackName}": ${detail} (${resourceNames.slice(0, 5).map((name) => JSON.stringify(name)).join(", ")}${resourceNames.length > 5 ? ` and ${resourceNames.length - 5} more` : ""}). Refused before any change: nothing was deleted.`);
    this.name = "ShardDirectoryConflictError";
  }
}

/** Which shard's state holds each group; a group two states hold refuses the run. */
export function holdersOf(stack: string, heldByShard: ReadonlyMap<number, readonly string[]>): Map<string, number> {
  const holder = new Map<string, number>();
  const doubled = new Set<string>();
  for (const [shard, names] of heldByShard) {
    for (const name of names) {
      if (holder.has(name) && holder.get(name) !== shard) doubled.add(name);
      else holder.set(name, shard);
    }
  }
  if (doubled.size > 0) {
    throw new ShardDirectoryConflictError(stack, [...doubled].sort(), "more than one shard's state holds these groups; a person must decide which copy is the group (pulumi state delete in the other shard)");
  }
  return holder;
}

/**
 * The delete guard of a whole-set up or destroy over shards: what each shard's
 * run will delete, from that shard's state (`heldOf`) and its declaration
 * (its part's specs), judged as one run of the whole stack; then each shard's
 * own guard, which its run checks again from its state under its lease
 * (engine/run-once.ts): at most the deletions judged here for it, so a state
 * that changed in between refuses that run instead of deleting more.
 */
export function planShardDeletions(
  operation: "up" | "destroy",
  stack: string,
  parts: readonly ShardPart[],
  heldOf: (shard: number) => readonly string[],
  guard: DeleteGuardOptions,
): Map<number, DeleteGuardOptions> {
  const plans = parts.map((part) => {
    const held = heldOf(part.shard);
    const declared = new Set(part.specs.map(resourceNameOf));
    return { shard: part.shard, held, deleting: operation === "destroy" ? [...held] : held.filter((name) => !declared.has(name)) };
  });
  const guarded = (operation === "up" && guard.allowDeleteAll !== true) || guard.maxDeletes !== undefined;
  if (!guarded) return new Map(plans.map((plan) => [plan.shard, guard]));
  const held = plans.reduce((sum, plan) => sum + plan.held.length, 0);
  assertDeletionsAllowed({ operation, stack, held, deleting: plans.flatMap((plan) => plan.deleting).sort() }, guard);
  // Judged across the stack: a shard whose every group goes is allowed that, and no more than that.
  return new Map(plans.map((plan) => [plan.shard, { allowDeleteAll: true, maxDeletes: Math.min(guard.maxDeletes ?? Number.MAX_SAFE_INTEGER, plan.deleting.length) }]));
}

function addSummaries(a: RunSummary, b: RunSummary): RunSummary {
  return { create: a.create + b.create, update: a.update + b.update, replace: a.replace + b.replace, delete: a.delete + b.delete, same: a.same + b.same };
}

/** The shards' results as one, named by the stack the user gave. */
export function mergeRunResults(stack: string, results: readonly RunResult[]): RunResult {
  const first = results[0]!;
  const groups: GroupResult[] = results.flatMap((r) => r.groups).sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
  return {
    operation: first.operation,
    stack,
    backendUrl: first.backendUrl,
    summary: results.map((r) => r.summary).reduce(addSummaries),
    changed: results.some((r) => r.changed),
    groups,
  };
}
