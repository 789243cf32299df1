// Which failed calls a caller may simply ask again (issue 32 item 2: a call in
// flight when its replica lost the stack "either finishes consistently or fails
// with a retryable error"). One list, the one docs/cli-json.md ("Which failures
// to ask again") gives callers, so that the checker, the tests and the docs agree; an error that carries `retryable` itself (a future field of
// UserGroupsError) is taken at its word.

/**
 * Error codes that mean "nothing is decided, ask again": the stack was busy or
 * out of reach, or this replica lost the right to run on it.
 */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  // another run held the stack for the whole wait
  "stack_lock_timeout",
  "stack_locked",
  // the run lease: held elsewhere, lost (connection broke, not renewed in time), out of reach
  "run_lease_held",
  "run_lease_lost",
  "run_lease_unreachable",
  // a provider process's request not sent: its run's lease has a newer holder (fencing)
  "run_fenced",
  // the backend (PostgreSQL or the file system) could not be reached
  "backend_unreachable",
  // the shard directory's lock was held too long
  "shard_directory_locked",
]);

export function isRetryableError(error: { readonly code?: string | undefined; readonly retryable?: boolean | undefined }): boolean {
  if (error.retryable !== undefined) return error.retryable;
  return error.code !== undefined && RETRYABLE_CODES.has(error.code);
}
