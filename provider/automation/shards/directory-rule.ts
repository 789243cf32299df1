// The rule that keeps the shard directory true (directory.ts, the rule), in one
// place: what a run of one shard claims and forgets under that shard's run
// lease (ShardClaims, used by run-shard.ts only), and the one write allowed
// without the lease (recordUnlisted: an entry only where there is none).
import type { Deployment } from "@pulumi/pulumi/automation";
import { heldGroupNames } from "../model";
import type { ShardDirectory } from "./directory";
import { ShardDirectoryConflictError } from "./sharded-stack";

/** One shard run's claims and forgets, made holding the shard's run lease. */
export class ShardClaims {
  /** Entries of this shard for groups its state did not hold and a whole-set run did not declare: dropped after it. */
  private stale: string[] = [];

  constructor(
    private readonly directory: ShardDirectory,
    private readonly stackName: string,
    private readonly shard: number,
  ) {}

  /**
   * Before a run that declares the shard's whole set, from the state as read
   * under the lease: the entries of the groups the state holds name this shard
   * (the state is the truth), and the declared groups it does not hold are
   * claimed for it; one a concurrent run put in another shard meanwhile refuses
   * the run (ShardDirectoryConflictError, before any change).
   */
  async beforeWholeSet(state: Deployment, declared: readonly string[]): Promise<void> {
    const held = heldGroupNames(state);
    const holding = new Set(held);
    const mine = await this.directory.entriesOf(this.shard);
    const mineSet = new Set(mine);
    await this.directory.repair(new Map(held.filter((name) => !mineSet.has(name)).map((name) => [name, this.shard])));
    const wanted = declared.filter((name) => !holding.has(name));
    const elsewhere = await this.directory.claim(wanted, this.shard);
    if (elsewhere.size > 0) throw new ShardDirectoryConflictError(this.stackName, [...elsewhere.keys()].sort(), "a concurrent run put these groups in another shard meanwhile; run again");
    const creating = new Set(wanted);
    this.stale = mine.filter((name) => !holding.has(name) && !creating.has(name));
  }

  /** After a whole-set run that succeeded: the entries of the groups it deleted, and the stale ones, are dropped. */
  async afterWholeSet(deleted: readonly string[]): Promise<void> {
    await this.directory.forget([...new Set([...this.stale, ...deleted])], this.shard);
  }

  /**
   * Before a targeted run that may create `names` (a fleet's batch): they are
   * claimed for this shard; answers those whose entry names another shard (a
   * concurrent run put them there meanwhile): they must not be created here.
   */
  claimTargets(names: readonly string[]): Promise<Map<string, number>> {
    return this.directory.claim(names, this.shard);
  }

  /** After a targeted destroy (failed or not): the entries of the targets its state, read again now, no longer holds are dropped. */
  async forgetGone(targets: readonly string[], state: Deployment): Promise<void> {
    const still = new Set(heldGroupNames(state));
    await this.directory.forget(targets.filter((name) => !still.has(name)), this.shard);
  }
}

/**
 * Without the shard's lease: the groups a shard's state holds that the directory
 * (as read, `known`) has no entry for get one. Written only where there is none,
 * which at worst leaves a stale entry (it sends a later run to this shard).
 */
export async function recordUnlisted(directory: ShardDirectory, shard: number, held: readonly string[], known: ReadonlyMap<string, number>): Promise<void> {
  const missing = held.filter((name) => !known.has(name));
  if (missing.length > 0) await directory.claim(missing, shard);
}
