// The one clock every timed policy takes (retries, pacing, rate budget, lock
// waits, leases, takeovers): time, sleeping and jitter, injected together so
// that a test can run a policy on a frozen or fast clock (as
// terraform-provider-time's internal/clock). Production code uses systemClock.
import { setTimeout as sleepFor } from "node:timers/promises";

/** What time it is, how to wait and where jitter comes from, for every timed policy of the package. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves after `ms`; rejects with the signal's reason when it aborts first. `options.keepAlive: false`: the
   * wait does not keep the process alive (a watchdog's tick, a flush's cap); a clock with no process ignores it.
   */
  sleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void>;
  /** A number in [0, 1), for jitter. */
  random(): number;
}

/** How a sleep waits. */
export interface SleepOptions {
  /** false: a timer that never keeps the process alive by itself (Node's unref'd timer). Default true. */
  readonly keepAlive?: boolean;
}

/** The real clock: `Date.now`, timers, `Math.random`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: async (ms, signal, options) => {
    try {
      await sleepFor(Math.max(0, ms), undefined, { ...(signal ? { signal } : {}), ...(options?.keepAlive === false ? { ref: false } : {}) });
    } catch (error) {
      throw signal?.aborted ? signal.reason : error; // node's AbortError holds the reason only as its cause
    }
  },
  random: () => Math.random(),
};

/** `systemClock` with some of its parts replaced (a test's frozen `now`, a recorded `sleep`). */
export function clockWith(parts: Partial<Clock>): Clock {
  return { ...systemClock, ...parts };
}

/**
 * An options bag's clock: its `clock` (default systemClock), with the separate
 * `now`/`sleep`/`random` that public options took before `clock` (deprecated) put in.
 */
export function clockOf(options: {
  readonly clock?: Clock;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
}): Clock {
  const base = options.clock ?? systemClock;
  const { now, sleep, random } = options;
  if (now === undefined && sleep === undefined && random === undefined) return base;
  return {
    now: now ?? (() => base.now()),
    sleep: sleep ?? ((ms, signal, sleepOptions) => base.sleep(ms, signal, sleepOptions)),
    random: random ?? (() => base.random()),
  };
}
