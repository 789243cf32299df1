// Runs over the shards of one stack (shard-directory.ts says which stack holds
// which group): a whole-set run becomes one run per shard, a few at a time,
// each with Pulumi's own checkpoints and lock and our run lease, so crash
// safety is per shard exactly what it is for one stack; the results are merged
// back into one, named by the stack the user gave.
import { availableParallelism } from "node:os";
import { type GroupSpec, resourceNameOf, assertDeletionsAllowed, type DeleteGuardOptions, heldGroupNames, type GroupResult, type Operation, type RunOptions, type RunResult, type RunSummary } from "../model";
import { countsOf, planAssignments, type ShardDirectory, shardDirectoryFor, shardsOf, shardStackName, validShardSize, assertUserStackName } from "./directory";
import { PROJECT_NAME } from "../engine";

/** How many shards run at once: the engine, its program and provider each take a core's worth. */
export function shardConcurrency(): number {
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
   * new groups' shards (an up); a preview only plans them.
   */
  async parts(specs: readonly GroupSpec[], assign: boolean): Promise<ShardPart[]> {
    const names = specs.map(resourceNameOf);
    let known = await this.directory.read();
    let plan: Map<string, number>;
    if (assign) {
      plan = await this.directory.assign(names, this.shardSize);
      known = new Map([...known, ...plan]);
    } else {
      plan = planAssignments(known, countsOf(known), names, this.shardSize);
    }
    const byShard = new Map<number, GroupSpec[]>(shardsOf(new Map([...known, ...plan])).map((shard) => [shard, []]));
    for (const spec of specs) byShard.get(plan.get(resourceNameOf(spec))!)!.push(spec);
    return [...byShard].sort(([a], [b]) => a - b).map(([shard, shardSpecs]) => ({ shard, options: this.optionsOf(shard), specs: shardSpecs }));
  }

  close(): Promise<void> {
    return this.directory.close();
  }
}

/**
 * The delete guard of a whole-set run over several shards, decided across all
 * of them before any runs (each shard's run then goes unguarded): `held` reads
 * one shard's state.
 */
export async function assertShardDeletionsAllowed(
  operation: Operation,
  stack: string,
  parts: readonly ShardPart[],
  guard: DeleteGuardOptions,
  held: (part: ShardPart) => Promise<Parameters<typeof heldGroupNames>[0] | undefined>,
): Promise<void> {
  const guarded = (operation === "up" && guard.allowDeleteAll !== true) || guard.maxDeletes !== undefined;
  if (!(operation === "up" || operation === "destroy") || !guarded) return;
  const heldNames = (
    await eachLimited(parts, shardConcurrency(), async (part) => {
      const deployment = await held(part);
      return deployment === undefined ? [] : heldGroupNames(deployment);
    })
  ).flat();
  const declared = new Set(parts.flatMap((part) => part.specs.map(resourceNameOf)));
  const deleting = operation === "destroy" ? heldNames : heldNames.filter((name) => !declared.has(name));
  assertDeletionsAllowed({ operation, stack, held: heldNames.length, deleting: deleting.sort() }, guard);
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
