// Pulumi's Node.js SDK makes four promises for every property a resource
// registers (runtime/rpc.js transferProperties) and, in debuggablePromise,
// formats a stack trace for each through source-map-support. It shows those
// traces only in its promise-leak report, and only when
// PULUMI_DEBUG_PROMISE_LEAKS is set. A UserGroup registers eight properties, so
// that formatting (32 traces per group) was most of what declaring one cost the
// program's process, and skipping it is several times cheaper than formatting
// (figures: docs/performance.md, fix 7).

/** What the promise-leak report shows for a trace skipped here, if it ever shows one. */
export const SKIPPED_PROMISE_STACK =
  "(stack not recorded; set PULUMI_DEBUG_PROMISE_LEAKS=1 to record it)";

/** The SDK function whose traces are skipped; every other error is formatted as before. */
const PULUMI_PROMISE_WRAPPER = "debuggablePromise";

type PrepareStackTrace = (error: Error, frames: NodeJS.CallSite[]) => unknown;

/**
 * Until the returned function is called, stack traces taken in Pulumi's
 * debuggablePromise are not formatted. Call it around a synchronous step only
 * (a resource's registration): the formatter is global while it is in place.
 *
 * Nothing changes when PULUMI_DEBUG_PROMISE_LEAKS is set (the traces are then
 * shown) or when no formatter is installed (V8's own is cheap enough). Errors
 * created but not yet read in between are formatted when read, by whatever
 * formatter is installed then: V8 formats stack traces lazily.
 */
export function skipPulumiPromiseStacks(env: NodeJS.ProcessEnv = process.env): () => void {
  const original = Error.prepareStackTrace as PrepareStackTrace | undefined;
  if (original === undefined || env.PULUMI_DEBUG_PROMISE_LEAKS) return () => {};
  const skipping: PrepareStackTrace = (error, frames) =>
    frames[0]?.getFunctionName() === PULUMI_PROMISE_WRAPPER ? SKIPPED_PROMISE_STACK : original(error, frames);
  Error.prepareStackTrace = skipping;
  return () => {
    // Leave a formatter someone else installed meanwhile in place.
    if (Error.prepareStackTrace === skipping) Error.prepareStackTrace = original;
  };
}
