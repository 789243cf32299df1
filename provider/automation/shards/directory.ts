// Which Pulumi stack of a sharded stack holds each group (docs/architecture.md,
// "Shards"). The file and PostgreSQL backends rewrite a stack's whole state at
// every step, so one stack's cost grows with the square of its size; a stack
// the user names is therefore split into shards of bounded size: the stack
// itself (shard 0, where every group of an older version already lives) and
// `<stack>.shard-<k>`. A group's shard is chosen once, when it is first asked
// for, and written here before any engine run may create it; it never moves.
// A stale entry (a create that never happened, a group deleted before its
// entry was forgotten) only sends a later run to the right shard again.
//
// The rule that keeps the directory true (issue 32, "linearizable per group"):
// a shard's state holds a group only if the directory names that shard for it.
// A run creates a group in shard s only holding s's run lease and after
// `claim`ing the group for s here; an entry of s is `forget`-ten only holding
// s's run lease, for a group s's state (read under that lease) does not hold or
// that the run under it deleted. Anything else reads, plans, or writes an
// entry only where there is none (`claim`, which at worst leaves a stale one).
//
// The directory lives in the backend beside the run lease, kept by the
// backend's adapter (backends/: a file in a file backend, tables of ours on
// PostgreSQL), with the plan of new assignments handed to it from here. Other
// backends (Pulumi Cloud, S3, ...) are not sharded: their groups stay in one stack.
import { backendFor, type DirectoryStore, MAX_SHARDS } from "../../backends";
import { UserGroupsError } from "../../wire/errors";
import { backendPlace, BackendUnreachableError } from "../engine";
import { assertValidStackName, isValidStackName } from "../model";

/**
 * Groups per shard before new groups go to the next one (RunOptions.shardSize).
 * A shard's up costs the square of its size (its state is rewritten at every
 * step) plus a fixed start; 250 was fastest of 125, 250 and 500 for an up of
 * 3,000, at the price of more shard starts in a preview whose shards changed (an
 * unchanged shard's preview reads its state only; docs/performance.md, "Scale").
 */
export const DEFAULT_SHARD_SIZE = 250;
/** The most groups a shard may be asked to hold (a shard's state is rewritten at every step). */
export const MAX_SHARD_SIZE = 5_000;
export { MAX_SHARDS } from "../../backends";

const SHARD_SUFFIX = /\.shard-\d{1,6}$/;

/** A stack name ours would make for a shard, refused as a name a user gives. */
export class ReservedStackNameError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "reserved_stack_name",
      `Stack name ${JSON.stringify(stackName.slice(0, 120))} ends in ".shard-<n>", which names the shards of a stack (docs/architecture.md, "Shards"): choose another name.`,
    );
    this.name = "ReservedStackNameError";
  }
}

/** A stack whose name leaves no room for its shards' names (at most 100 characters per segment). */
export class ShardNameError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "shard_name_too_long",
      `Stack "${stackName}" has grown past one shard, and its name is too long to name another ("<stack>.shard-<n>" must fit in 100 characters): use a shorter stack name.`,
    );
    this.name = "ShardNameError";
  }
}

export function isShardStackName(stack: string): boolean {
  return SHARD_SUFFIX.test(stack.split("/").at(-1) ?? "");
}

/** Throws ReservedStackNameError for a name the user may not give (a shard's). */
export function assertUserStackName(stack: string): string {
  assertValidStackName(stack);
  if (isShardStackName(stack)) throw new ReservedStackNameError(stack);
  return stack;
}

/** The Pulumi stack of shard `shard` of `stack`: the stack itself for 0. */
export function shardStackName(stack: string, shard: number): string {
  if (shard === 0) return stack;
  const name = `${stack}.shard-${shard}`;
  if (!isValidStackName(name)) throw new ShardNameError(stack);
  return name;
}

/** Checks a shard size given by a caller. */
export function validShardSize(size: number | undefined): number {
  if (size === undefined) return DEFAULT_SHARD_SIZE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_SHARD_SIZE) throw new RangeError(`shardSize must be a whole number from 1 to ${MAX_SHARD_SIZE}`);
  return size;
}

/**
 * Shards for the names not yet assigned: each to the lowest shard with room
 * (shard 0 first), in the order given. Pure: `assigned` and `counts` are the
 * directory as read; the answer holds every name of `names`.
 */
export function planAssignments(
  assigned: ReadonlyMap<string, number>,
  counts: ReadonlyMap<number, number>,
  names: readonly string[],
  shardSize: number,
): Map<string, number> {
  const plan = new Map<string, number>();
  const filled = new Map(counts);
  let shard = 0;
  for (const name of names) {
    const known = assigned.get(name) ?? plan.get(name);
    if (known !== undefined) {
      plan.set(name, known);
      continue;
    }
    while ((filled.get(shard) ?? 0) >= shardSize) shard += 1;
    if (shard >= MAX_SHARDS) throw new RangeError(`a stack holds at most ${MAX_SHARDS} shards of ${shardSize} groups`);
    plan.set(name, shard);
    filled.set(shard, (filled.get(shard) ?? 0) + 1);
  }
  return plan;
}

/** The shards that hold at least one group, and shard 0 always (in order). */
export function shardsOf(assigned: ReadonlyMap<string, number>): number[] {
  return [...new Set([0, ...assigned.values()])].sort((a, b) => a - b);
}

/** How many groups each shard holds, by the directory. */
export function countsOf(assigned: ReadonlyMap<string, number>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const shard of assigned.values()) counts.set(shard, (counts.get(shard) ?? 0) + 1);
  return counts;
}

/**
 * A stack's shard directory: the backend's directory store (backends/backend.ts
 * DirectoryStore, its storage steps) with the plan of new assignments applied
 * here. The rule of its use (file header): `initialize` first, once per stack;
 * `claim` and `forget` only under that shard's run lease (`forget` for groups
 * its state, read under the lease, does not hold); `repair` as a shard's state
 * read under its lease proves the entries.
 */
export interface ShardDirectory extends Omit<DirectoryStore, "assign"> {
  /** Whether groups of this stack may go to more than one shard (false: a backend without a directory). */
  readonly sharded: boolean;
  /** Assigns the names that have no shard yet (planAssignments, under the store's lock, so that concurrent runs agree); every name's shard. */
  assign(names: readonly string[], shardSize: number): Promise<Map<string, number>>;
}

/** A backend without a directory: one stack, as before shards. */
class SingleStackDirectory implements ShardDirectory {
  readonly sharded = false;
  async read() {
    return new Map<string, number>();
  }
  async assign(names: readonly string[]) {
    return new Map(names.map((name) => [name, 0]));
  }
  async initialize() {}
  async forget() {}
  async claim() {
    return new Map<string, number>();
  }
  async repair() {}
  async entriesOf() {
    return [];
  }
  async existingShards() {
    return [];
  }
  async close() {}
}

/**
 * A backend's directory store (backends/) with the rule of new assignments
 * (planAssignments) handed to it, applied under its lock or in its transaction.
 */
class RuledDirectory implements ShardDirectory {
  readonly sharded = true;
  constructor(private readonly store: DirectoryStore) {}
  read() {
    return this.store.read();
  }
  assign(names: readonly string[], shardSize: number) {
    return this.store.assign((assigned) => planAssignments(assigned, countsOf(assigned), names, shardSize));
  }
  initialize(rootHeld: () => Promise<readonly string[] | undefined>) {
    return this.store.initialize(rootHeld);
  }
  forget(names: readonly string[], shard: number) {
    return this.store.forget(names, shard);
  }
  claim(names: readonly string[], shard: number) {
    return this.store.claim(names, shard);
  }
  repair(entries: ReadonlyMap<string, number>) {
    return this.store.repair(entries);
  }
  entriesOf(shard: number) {
    return this.store.entriesOf(shard);
  }
  existingShards() {
    return this.store.existingShards();
  }
  close() {
    return this.store.close();
  }
}

/** The shard directory of a stack in this backend (one stack, unsharded, where the backend has none). */
export function shardDirectoryFor(backendUrl: string, project: string, stack: string): ShardDirectory {
  const backend = backendFor(backendUrl);
  if (backend === undefined) return new SingleStackDirectory();
  // The same error as Pulumi's own failure to reach the backend, and never its password.
  const unreachable = (detail: string, connection: string) => new BackendUnreachableError("backend_unreachable", backendPlace(connection), detail);
  return new RuledDirectory(backend.shardDirectory(project, stack, { unreachable }));
}
