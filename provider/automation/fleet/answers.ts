// Each caller of a batch its own answer (CONTRACT F5): its group's outcome, an
// error scrubbed of every other group of the batch and of every secret, and a
// group a concurrent run moved to another shard asked again (at most
// MAX_MOVES times).
import { UserGroupsError } from "../../wire/errors";
import { scrubText } from "../../client/redact";
import { secretValuesOf } from "../engine";
import type { RunOptions } from "../model";
import { type GroupOutcome, othersScrubber, scrubbedCopy } from "./fleet-isolation";
import { GroupMoved } from "./errors";
import type { FleetShards } from "./fleet-shards";
import { type Request, urnOfGroup, type Waiter } from "./requests";

/** How often one ensure follows its group to another shard before it fails (retryable). */
export const MAX_MOVES = 3;

export class Answers {
  /** How often each waiting ensure was sent to another shard (a concurrent run moved its group). */
  private readonly moves = new WeakMap<Request, number>();

  constructor(
    private readonly options: RunOptions,
    private readonly shards: FleetShards,
    /** Where a request asked again goes: the fleet's queue. */
    private readonly requeued: (request: Request) => void,
  ) {}

  /** Settles the batch's requests for this group (one, or several asking the same); a group moved meanwhile is asked again. */
  settle(batch: readonly Request[], resourceName: string, outcome: GroupOutcome<unknown>): void {
    for (const request of batch) {
      if (request.resourceName !== resourceName) continue;
      if (outcome.ok) (request.waiter as Waiter<unknown>).resolve(outcome.value);
      else if (outcome.error instanceof GroupMoved) this.askAgain(request, batch);
      else this.reject(request, outcome.error, batch);
    }
  }

  /**
   * A request for a group that a concurrent run put in another shard while its
   * batch waited for its shard: asked again, from the directory as it is now.
   */
  private askAgain(request: Request, batch: readonly Request[]): void {
    const moves = (this.moves.get(request) ?? 0) + 1;
    this.moves.set(request, moves);
    if (moves > MAX_MOVES) {
      const message = `User group "${request.resourceName}" kept moving between shards while this call waited (concurrent removes and ensures of it): ask again.`;
      this.reject(request, new UserGroupsError("shard_directory_conflict", message), batch);
    } else this.requeued(request);
  }

  /**
   * Rejects one caller with its own copy of the error, causes and captured
   * output included: no secret, and no other group of its batch (a service
   * may show the message to its customer).
   */
  reject(request: Request, error: unknown, batch: readonly Request[]): void {
    const others = batch
      .filter((other) => other.resourceName !== request.resourceName)
      .map((other) => ({
        userGroupId: other.kind === "ensure" ? other.spec.userGroupId : other.userGroupId,
        resourceName: other.resourceName,
        urn: urnOfGroup(this.shards.stackNameOf(this.shards.shardOf(other.resourceName)), other.resourceName),
      }));
    const secrets = secretValuesOf(this.options);
    const withoutOthers = othersScrubber(others);
    request.waiter.reject(scrubbedCopy(error, (text) => withoutOthers(scrubText(text, secrets))));
  }
}
