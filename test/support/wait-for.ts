// Waiting for a condition instead of sleeping a fixed time: fast when the
// condition comes early, and a failure that names what never happened.

export interface WaitForOptions {
  /** Give up after this long (default 10 s). */
  readonly timeoutMs?: number;
  /** Time between checks (default 10 ms). */
  readonly intervalMs?: number;
  /** What was awaited, for the timeout's message. */
  readonly what?: string;
}

/** Resolves once `condition` returns true (it may be async); rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, options: WaitForOptions = {}): Promise<void> {
  const { timeoutMs = 10_000, intervalMs = 10, what = "the condition" } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
