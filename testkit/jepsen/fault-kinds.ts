// The faults a history can carry, per backend, and THE ONE PLACE that says which
// of them wait for another branch (issue 32): test/jepsen/ skips a history whose
// kind is listed below (JEPSEN_RUN_ALL=1 runs them anyway); after merging the
// branch, delete its entries here and the tests run in `npm test`.

export type Backend = "postgres" | "file";

export type FaultKind =
  /** No fault: ensures, removes and lists of colliding ids from every replica. */
  | "none"
  /** Removes racing ensures of the same ids from different replicas, on small shards (issue 32, "A remove racing an ensure"). */
  | "race"
  /** SIGKILL of a replica's process group (and its provider's) while it runs on the stack. */
  | "kill"
  /** SIGSTOP of every process of a replica while it holds the stack, SIGCONT later. */
  | "pause"
  /** A replica cut off from PostgreSQL through Toxiproxy: every connection reset (reset_peer toxic). */
  | "partition-reset"
  /** ... its proxy disabled: connections closed, new ones refused. */
  | "partition-refuse"
  /** ... a black hole: connections stay open, every byte is dropped (timeout toxic). */
  | "partition-blackhole"
  /** PostgreSQL restarted (pg_ctl stop -m fast, start) while a run is under way. */
  | "pg-restart"
  /** File backend: the holder's engine frozen at its checkpoint write (a write that takes seconds). */
  | "slow-disk"
  /** File backend: the holder's Node process stalled (no lease renewal) while its engine goes on with a slow request. */
  | "stall-node";

/** The kinds each backend's histories cover. */
export const FAULT_KINDS: Readonly<Record<Backend, readonly FaultKind[]>> = {
  postgres: ["none", "kill", "pause", "partition-reset", "partition-refuse", "partition-blackhole", "pg-restart", "race"],
  file: ["none", "kill", "pause", "slow-disk", "stall-node", "race"],
};

/**
 * Histories not in `npm test` yet, though wt/lease (fencing) and wt/races (the
 * remove/ensure race) are on main. Each was run with JEPSEN_RUN_ALL=1 on main
 * on 2026-11-25 (served again: from the fault's start):
 * - postgres:partition-refuse VALID (5.6 s): runs in `npm test` (not listed).
 * - postgres:pause VALID (14.5 s); in the full suite's load its history stayed
 *   valid (served 17.6 s) but the probe replica was never served within the
 *   history, so the 30 s check failed: kept out until the probe is made
 *   steady. test/automation/fleet/fleet-pause.test.ts covers the pause.
 * - postgres:partition-reset INVALID (5.4 s) and postgres:partition-blackhole
 *   INVALID (14.4 s): state and service consistent, but a caller got the
 *   driver's raw "Connection terminated unexpectedly", with no code, so not
 *   retryable by retryable.ts: a PostgreSQL error of a store of ours escapes
 *   uncoded when its connection is cut.
 * - file:pause VALID (48.5 s) and file:stall-node VALID (39.7 s): a file backend
 *   never takes over a live holder (it cannot fence), so the others wait until
 *   the paused one resumes; too slow for the suite, kept for the bench.
 * - postgres:race, file:race VALID. With them, every history lets any replica
 *   remove any id; that found a remove racing a remove failing with
 *   pulumi_command_failed (kill and slow-disk histories), fixed in fleet.ts
 *   (a group gone meanwhile is answered "same" under the lease), not yet
 *   re-run as histories.
 */
export const AWAITING_FENCING: ReadonlySet<`${Backend}:${FaultKind}`> = new Set<`${Backend}:${FaultKind}`>([
  "postgres:pause",
  "postgres:partition-blackhole",
  "postgres:partition-reset",
  "file:pause",
  "file:stall-node",
]);

/** Histories whose removes race (see above): in npm test once their re-run is VALID. */
export const AWAITING_RACE_FIX: ReadonlySet<`${Backend}:${FaultKind}`> = new Set<`${Backend}:${FaultKind}`>(["postgres:race", "file:race"]);

/**
 * Histories that fail on main for a reason of their own, not fencing: on a file
 * backend, a replica that reads the state (`stack export`, no lock) while the
 * holder's checkpoint write stalls gets `failed to load checkpoint: EOF` (the
 * engine truncates and rewrites `<stack>.json.attrs` in place), as
 * `pulumi_command_failed`, a code that does not say "ask again" (asking again
 * does succeed). Needs that read retried, or its error coded retryable.
 */
export const AWAITING_TORN_READ_FIX: ReadonlySet<`${Backend}:${FaultKind}`> = new Set<`${Backend}:${FaultKind}`>(["file:slow-disk"]);

/** Why a history of this kind is not run on this branch yet (undefined: it runs). */
export function awaiting(backend: Backend, kind: FaultKind, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env["JEPSEN_RUN_ALL"] === "1") return undefined;
  if (AWAITING_FENCING.has(`${backend}:${kind}`)) return "not in npm test yet: see testkit/jepsen/fault-kinds.ts AWAITING_FENCING";
  if (AWAITING_RACE_FIX.has(`${backend}:${kind}`)) return "not in npm test yet: see testkit/jepsen/fault-kinds.ts AWAITING_RACE_FIX";
  if (AWAITING_TORN_READ_FIX.has(`${backend}:${kind}`)) return "awaits a retried or retryable torn checkpoint read (testkit/jepsen/fault-kinds.ts AWAITING_TORN_READ_FIX)";
  return undefined;
}
