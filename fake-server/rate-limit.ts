// W11: at most N requests per window per API key, fixed windows. Counters live
// in a map keyed by the key's index; windows are computed lazily (no timers).
export interface RateLimitOptions {
  requests: number;
  windowSeconds: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

export class RateLimiter {
  private readonly windows = new Map<number, { start: number; count: number }>();

  constructor(
    private readonly options: RateLimitOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request for `keyId`; every request counts, refused ones included. */
  take(keyId: number): RateDecision {
    const now = this.now();
    const windowMs = this.options.windowSeconds * 1000;
    let window = this.windows.get(keyId);
    if (window === undefined || now - window.start >= windowMs) {
      window = { start: now, count: 0 };
      this.windows.set(keyId, window);
    }
    window.count += 1;
    if (window.count <= this.options.requests) return { ok: true };
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + windowMs - now) / 1000));
    return { ok: false, retryAfterSeconds };
  }

  reset(): void {
    this.windows.clear();
  }
}
