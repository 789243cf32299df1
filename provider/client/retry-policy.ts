// When and how long to wait before trying a request again. Plain functions so
// that unit tests drive them with a fixed random source and clock.

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  /** No retry starts once this much time has passed since the first attempt. */
  readonly maxElapsedMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  maxElapsedMs: 120_000,
  baseDelayMs: 250,
  maxDelayMs: 15_000,
};

/** What one attempt ended with, as far as retrying is concerned. */
export type AttemptOutcome =
  | { readonly kind: "response"; readonly status: number; readonly retryAfterMs?: number }
  | { readonly kind: "network"; readonly sent: boolean };

/**
 * 429 and 5xx are worth another try; so is a network failure. 4xx are the caller's to fix,
 * and so is 507 (Insufficient Storage: the store is full until someone deletes groups).
 */
export function isRetryable(outcome: AttemptOutcome): boolean {
  if (outcome.kind === "network") return true;
  return outcome.status === 429 || (outcome.status >= 500 && outcome.status !== 507);
}

/**
 * Capped exponential backoff with full jitter: a uniform wait in
 * [0, min(max, base * 2^(attempt-1))]. A Retry-After from the server is a floor.
 * `attempt` counts the attempts made so far (1 after the first failure).
 */
export function backoffDelayMs(policy: RetryPolicy, attempt: number, random: () => number, retryAfterMs?: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs !== undefined ? Math.max(retryAfterMs, jittered) : jittered;
}

/**
 * The next wait, or undefined when the policy says stop: out of attempts, or the
 * wait would end past the elapsed-time budget.
 */
export function nextRetryDelayMs(
  policy: RetryPolicy,
  outcome: AttemptOutcome,
  attemptsMade: number,
  elapsedMs: number,
  random: () => number,
): number | undefined {
  if (!isRetryable(outcome) || attemptsMade >= policy.maxAttempts) return undefined;
  const retryAfterMs = outcome.kind === "response" ? outcome.retryAfterMs : undefined;
  const delay = backoffDelayMs(policy, attemptsMade, random, retryAfterMs);
  if (elapsedMs + delay > policy.maxElapsedMs) return undefined;
  return delay;
}

/** Parses Retry-After: delta-seconds or an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
