// Retry and timeout overrides read from the environment of the dynamic-provider
// process (the Automation API passes them through `envVars`). Production runs
// keep the defaults; tests and impatient CI jobs shorten them so that a dead
// API fails in seconds, not minutes.
import { z } from "zod";
import type { Timeouts } from "./http-client";
import type { RetryPolicy } from "./retry-policy";
import { UserGroupsError } from "../wire/errors";

export const TUNING_ENV = {
  /** Connect, headers and body timeout of every request, in ms. */
  timeoutMs: "USER_GROUPS_HTTP_TIMEOUT_MS",
  /** Attempts per request, the first included. */
  maxAttempts: "USER_GROUPS_MAX_ATTEMPTS",
  /** First backoff ceiling, in ms (doubles per attempt). */
  baseDelayMs: "USER_GROUPS_RETRY_BASE_DELAY_MS",
  /** Largest backoff, in ms (a Retry-After may still ask for more). */
  maxDelayMs: "USER_GROUPS_RETRY_MAX_DELAY_MS",
  /** No retry starts after this much time on one request, in ms. */
  maxElapsedMs: "USER_GROUPS_RETRY_MAX_ELAPSED_MS",
} as const;

export interface ClientTuning {
  readonly retry: Partial<RetryPolicy>;
  readonly timeouts: Partial<Timeouts>;
}

const positiveInt = z.coerce.number().int().positive().max(24 * 3600 * 1000);

export class InvalidTuningError extends UserGroupsError {
  constructor(variable: string, value: string) {
    super("invalid_tuning", `${variable} must be a positive whole number, got "${value}"`);
    this.name = "InvalidTuningError";
  }
}

function read(env: NodeJS.ProcessEnv, variable: string): number | undefined {
  const raw = env[variable];
  if (raw === undefined || raw.trim() === "") return undefined;
  const parsed = positiveInt.safeParse(raw.trim());
  // A typo must not silently fall back to two-minute retries (or to none).
  if (!parsed.success) throw new InvalidTuningError(variable, raw);
  return parsed.data;
}

export function tuningFromEnv(env: NodeJS.ProcessEnv): ClientTuning {
  const retry: { -readonly [K in keyof RetryPolicy]?: number } = {};
  const timeouts: { -readonly [K in keyof Timeouts]?: number } = {};
  const timeoutMs = read(env, TUNING_ENV.timeoutMs);
  if (timeoutMs !== undefined) Object.assign(timeouts, { connectMs: timeoutMs, headersMs: timeoutMs, bodyMs: timeoutMs });
  const maxAttempts = read(env, TUNING_ENV.maxAttempts);
  if (maxAttempts !== undefined) retry.maxAttempts = maxAttempts;
  const baseDelayMs = read(env, TUNING_ENV.baseDelayMs);
  if (baseDelayMs !== undefined) retry.baseDelayMs = baseDelayMs;
  const maxDelayMs = read(env, TUNING_ENV.maxDelayMs);
  if (maxDelayMs !== undefined) retry.maxDelayMs = maxDelayMs;
  const maxElapsedMs = read(env, TUNING_ENV.maxElapsedMs);
  if (maxElapsedMs !== undefined) retry.maxElapsedMs = maxElapsedMs;
  return { retry, timeouts };
}
