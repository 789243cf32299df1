// W11: at most N requests per window per API key, fixed windows. Counters live
// in a map keyed by the key's index; windows are computed lazily (no timers).
export interface RateLimitOptions {
  requests: number;
  windowSeconds: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

/** One key's standing, as `GET /__admin/rate-limit` shows it: the key by its index, never itself. */
export interface RateLimitKeyState {
  key: number;
  environment: string;
  readOnly: boolean;
  /** Requests counted in the open window (0 when none is open). */
  used: number;
  remaining: number;
  /** Whole seconds until the open window ends; null when none is open. */
  resetsInSeconds: number | null;
}

export interface RateLimitState extends RateLimitOptions {
  keys: RateLimitKeyState[];
}

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

  /** Where each key stands now; counts nothing. `keys` describe the keys by index. */
  state(keys: ReadonlyArray<{ environment: string; readOnly: boolean }>): RateLimitState {
    const now = this.now();
    const windowMs = this.options.windowSeconds * 1000;
    return {
      requests: this.options.requests,
      windowSeconds: this.options.windowSeconds,
      keys: keys.map(({ environment, readOnly }, key) => {
        const window = this.windows.get(key);
        const open = window !== undefined && now - window.start < windowMs;
        const used = open ? window.count : 0;
        return {
          key,
          environment,
          readOnly,
          used,
          remaining: Math.max(0, this.options.requests - used),
          resetsInSeconds: open ? Math.ceil((window.start + windowMs - now) / 1000) : null,
        };
      }),
    };
  }

  reset(): void {
    this.windows.clear();
  }
}
