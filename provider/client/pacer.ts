// Client-side pacing for a rate-limited API (W11: N requests per window per
// key, then 429 with Retry-After). Shared by every request of one client, so
// one provider process (one client per base URL + key) stays under the limit
// as a whole instead of each request backing off on its own.
//
// Until the first 429 nothing is paced. A 429 blocks every request until its
// Retry-After has passed and estimates the allowed rate from what got through:
// `admitted` requests in (time since the period began + Retry-After). After
// that requests start at least `intervalMs` apart. A 429 while paced means the
// estimate was too generous: the interval only grows.

import { type Clock, clockWith, systemClock } from "../clock";

/** @deprecated What time it is (ms): the pacer takes a {@link Clock} now (a bare function is still accepted). */
export type PacerClock = () => number;

export interface PacerOptions {
  /** Spacing is the estimate times this, to absorb timing noise (1.05 = 5% under the limit). */
  readonly safety?: number;
  /** Never wait more than this between two requests, whatever the estimate says. */
  readonly maxIntervalMs?: number;
}

export interface PacerState {
  readonly intervalMs: number;
  readonly blockedUntil: number;
  readonly limited: number;
}

export class Pacer {
  private intervalMs = 0;
  private nextSlotAt = 0;
  private blockedUntil = 0;
  /** Start of the current observation period and what was admitted in it. */
  private periodStart: number | undefined;
  private admitted = 0;
  private limited = 0;
  private readonly safety: number;
  private readonly maxIntervalMs: number;
  private readonly clock: Clock;

  /** `clock`: what time it is (default: the system's); injected so that unit tests drive the pacer with a fake clock. */
  constructor(clock: Clock | PacerClock = systemClock, options: PacerOptions = {}) {
    this.clock = typeof clock === "function" ? clockWith({ now: clock }) : clock;
    this.safety = options.safety ?? 1.05;
    this.maxIntervalMs = options.maxIntervalMs ?? 60_000;
  }

  /**
   * Books the next slot for a request that could start at `earliest` (a retry's
   * backoff) and returns how long to wait from now. The caller does the waiting,
   * once, so a backoff and a slot never add up.
   */
  reserve(earliest: number = this.clock.now()): number {
    const now = this.clock.now();
    const at = Math.max(now, earliest, this.nextSlotAt, this.blockedUntil);
    this.nextSlotAt = at + this.intervalMs;
    this.periodStart ??= at;
    return at - now;
  }

  /** Reports what the service answered a request that got a slot. */
  observe(status: number, retryAfterMs: number | undefined): void {
    const now = this.clock.now();
    if (status !== 429) {
      this.admitted += 1;
      return;
    }
    this.limited += 1;
    // Several 429s of one burst say the same thing: only the first one of a block counts.
    if (now < this.blockedUntil || retryAfterMs === undefined) {
      if (retryAfterMs !== undefined) this.blockedUntil = Math.max(this.blockedUntil, now + retryAfterMs);
      return;
    }
    const until = now + retryAfterMs;
    if (this.admitted > 0 && this.periodStart !== undefined) {
      const estimate = ((until - this.periodStart) / this.admitted) * this.safety;
      this.intervalMs = Math.min(this.maxIntervalMs, Math.max(estimate, this.intervalMs * this.safety));
    }
    this.blockedUntil = until;
    this.nextSlotAt = Math.max(this.nextSlotAt, until);
    // The next period begins when the service lets requests in again.
    this.periodStart = until;
    this.admitted = 0;
  }

  get state(): PacerState {
    return { intervalMs: this.intervalMs, blockedUntil: this.blockedUntil, limited: this.limited };
  }
}
