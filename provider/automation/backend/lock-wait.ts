// Waiting for a stack another run holds (any backend): Pulumi refuses a second
// update of a locked stack at once; a service or a CI job would rather wait.
// One policy for every caller (the fleet, the CLI's --lock-timeout): jittered
// exponential backoff, up to a time budget, then an error naming the stack and
// how long it waited. The clock (time, sleep, jitter) is injected for tests.
import { backoffDelayMs, type RetryPolicy } from "../../client/retry-policy";
import { type Clock, clockOf } from "../../clock";
import { formatDuration } from "../model";
import { UserGroupsError } from "../../wire/errors";

export class StackLockedError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    options?: { cause?: unknown },
  ) {
    super("stack_locked", `Stack "${stackName}" is locked: another run on it is in progress. Nothing was changed; try again when it has finished.`, options);
    this.name = "StackLockedError";
  }
}

export class StackLockTimeoutError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      "stack_lock_timeout",
      `Stack "${stackName}" stayed locked by another run for ${formatDuration(waitedMs)} (the lock timeout); nothing was changed. ` +
        "If that run is gone (killed), `user-groups recover` (or recoverStack) clears its lock.",
      options,
    );
    this.name = "StackLockTimeoutError";
  }
}

/** Is this the engine (any backend) or this process refusing a stack another run holds? */
export function isStackLocked(error: unknown): boolean {
  // Pulumi's ConcurrentUpdateError, by its name: this folder is on the CLI's path before any engine run
  // (safe file reads), and importing the class would load @pulumi/pulumi/automation there.
  if ((error instanceof Error && error.name === "ConcurrentUpdateError") || error instanceof StackLockedError) return true;
  // The HTTP backend's conflict and the diy backend's lock, as @pulumi/pulumi detects them,
  // for errors that reach us re-wrapped (e.g. from stack selection).
  const text = error instanceof Error ? error.message : "";
  return /the stack is currently locked by|\[409\] Conflict: Another update is currently in progress/.test(text) || isLockListingRace(text);
}

/**
 * The diy backend checks for others' locks by listing the stack's lock folder,
 * then reading each listed key; a lock released in between (another run ending)
 * fails the check with "could not list bucket: blob (code=NotFound)" (seen on
 * postgres://) or a NotFound on reading that lock's key. That is the same
 * contention, met before anything changed.
 */
function isLockListingRace(text: string): boolean {
  return /could not list bucket: blob \(code=NotFound\)|blob \(key "[^"]*\.pulumi\/locks\/[^"]*"\) \(code=NotFound\)/.test(text);
}

export interface LockWaitOptions {
  readonly stackName: string;
  /** How long to keep trying; 0 fails at the first refusal. */
  readonly timeoutMs: number;
  /** First backoff ceiling (doubles per attempt, full jitter); default 200 ms. */
  readonly baseDelayMs?: number;
  /** Largest backoff; default 5 s. */
  readonly maxDelayMs?: number;
  /** What time it is, how to wait, the backoff's jitter (default: the system's); for tests. */
  readonly clock?: Clock;
  /** @deprecated Give `clock` instead (this replaces its `now`). */
  readonly now?: () => number;
  /** @deprecated Give `clock` instead (this replaces its `sleep`). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @deprecated Give `clock` instead (this replaces its `random`). */
  readonly random?: () => number;
  /** Told before each wait (for progress output). */
  readonly onWait?: (waitMs: number, waitedMs: number) => void;
}

/**
 * The next wait before trying a locked stack again, or undefined when the
 * budget is spent. `attempt` counts the refusals so far (1 after the first).
 */
export function nextLockWaitMs(
  attempt: number,
  waitedMs: number,
  options: Pick<LockWaitOptions, "timeoutMs" | "baseDelayMs" | "maxDelayMs">,
  random: () => number,
): number | undefined {
  const remaining = options.timeoutMs - waitedMs;
  if (remaining <= 0) return undefined;
  const policy: RetryPolicy = {
    maxAttempts: Number.POSITIVE_INFINITY,
    maxElapsedMs: options.timeoutMs,
    baseDelayMs: options.baseDelayMs ?? 200,
    maxDelayMs: options.maxDelayMs ?? 5_000,
  };
  // At least a few ms, so that a run of zero draws does not spin; never past the budget.
  return Math.min(remaining, Math.max(5, backoffDelayMs(policy, attempt, random)));
}

/**
 * Runs `attempt` until it is not refused for a lock; waits between tries.
 * A refusal after the budget is a StackLockTimeoutError (timeout 0: the
 * refusal itself, as a StackLockedError).
 */
export async function withStackLockWait<T>(attempt: () => Promise<T>, options: LockWaitOptions): Promise<T> {
  const clock = clockOf(options);
  const started = clock.now();
  for (let refusals = 1; ; refusals++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isStackLocked(error)) throw error;
      const waitedMs = clock.now() - started;
      const backoff = nextLockWaitMs(refusals, waitedMs, options, () => clock.random());
      // A lease that says when it expires (PostgreSQL: the database's clock) is tried again right then, not up to a backoff later.
      const hint = (error as { cause?: { retryInMs?: unknown } }).cause?.retryInMs;
      const wait = backoff !== undefined && typeof hint === "number" && Number.isFinite(hint) ? Math.min(backoff, Math.max(5, hint)) : backoff;
      if (wait === undefined) {
        if (options.timeoutMs <= 0) throw error instanceof StackLockedError ? error : new StackLockedError(options.stackName, { cause: error });
        throw new StackLockTimeoutError(options.stackName, waitedMs, { cause: error });
      }
      options.onWait?.(wait, waitedMs);
      await clock.sleep(wait);
    }
  }
}
