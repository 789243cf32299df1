// R9: which failures are retried and how long the client waits.
import { describe, expect, it } from "vitest";
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  isRetryable,
  nextRetryDelayMs,
  parseRetryAfterMs,
  type RetryPolicy,
} from "../../provider/client/retry-policy";

const policy: RetryPolicy = { maxAttempts: 5, maxElapsedMs: 10_000, baseDelayMs: 100, maxDelayMs: 1_000 };

describe("retry policy", () => {
  it("retries 429, 5xx and network failures, not other 4xx nor 507 (a full store stays full)", () => {
    expect(isRetryable({ kind: "response", status: 429 })).toBe(true);
    expect(isRetryable({ kind: "response", status: 503 })).toBe(true);
    expect(isRetryable({ kind: "network", sent: true })).toBe(true);
    for (const status of [400, 401, 403, 404, 409, 413, 415, 507]) expect(isRetryable({ kind: "response", status })).toBe(false);
  });

  it("grows the ceiling exponentially up to the cap, with full jitter below it", () => {
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelayMs(policy, attempt, () => 0.999999))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(backoffDelayMs(policy, 3, () => 0)).toBe(0);
    expect(backoffDelayMs(policy, 3, () => 0.5)).toBe(200);
  });

  it("waits at least as long as Retry-After asks", () => {
    expect(backoffDelayMs(policy, 1, () => 0.5, 3_000)).toBe(3_000);
    expect(nextRetryDelayMs(policy, { kind: "response", status: 429, retryAfterMs: 2_000 }, 1, 0, () => 0)).toBe(2_000);
  });

  it("stops after maxAttempts", () => {
    const outcome = { kind: "response", status: 500 } as const;
    expect(nextRetryDelayMs(policy, outcome, 4, 0, () => 0.5)).toBeDefined();
    expect(nextRetryDelayMs(policy, outcome, 5, 0, () => 0.5)).toBeUndefined();
  });

  it("stops when the wait would end past the time budget", () => {
    const outcome = { kind: "response", status: 429, retryAfterMs: 5_000 } as const;
    expect(nextRetryDelayMs(policy, outcome, 1, 4_000, () => 0)).toBe(5_000);
    expect(nextRetryDelayMs(policy, outcome, 1, 6_000, () => 0)).toBeUndefined();
  });

  it("does not retry a final answer", () => {
    expect(nextRetryDelayMs(DEFAULT_RETRY_POLICY, { kind: "response", status: 404 }, 1, 0, () => 0)).toBeUndefined();
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-22T10:00:00Z");
    expect(parseRetryAfterMs("3", now)).toBe(3_000);
    expect(parseRetryAfterMs(" 0 ", now)).toBe(0);
    expect(parseRetryAfterMs("Sun, 22 Nov 2026 10:00:05 GMT", now)).toBe(5_000);
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
  });
});
