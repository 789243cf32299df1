// A clock for tests of the timed policies (provider/clock.ts): time stands still
// until set or slept through; every sleep is recorded.
import type { Clock } from "../../provider/clock";

export interface FakeClock extends Clock {
  /** What `now()` answers; a test may set it. */
  time: number;
  /** Every `sleep`'s argument, in order. */
  readonly slept: number[];
}

/**
 * `start`: the first `now()`. `advance` (default true): a sleep moves time on by
 * what it slept; false only records it. `random`: the jitter's source (default
 * Math.random).
 */
export function fakeClock(options: { start?: number; advance?: boolean; random?: () => number } = {}): FakeClock {
  const clock: FakeClock = {
    time: options.start ?? 0,
    slept: [],
    now: () => clock.time,
    sleep: async (ms: number) => {
      clock.slept.push(ms);
      if (options.advance !== false) clock.time += ms;
    },
    random: options.random ?? (() => Math.random()),
  };
  return clock;
}
