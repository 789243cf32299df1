// The rules that read the run record beside the lease (its format is the
// backends': backends/run-record.ts): who holds the stack, which dead runs left
// work behind, whether a Pulumi lock's holder is provably gone; the lease errors;
// the rules handed to every lease store (leaseRules).
import { hostname } from "node:os";
import { type LeaseRules, LEASE_TTL_MS, processAlive, pulumiProcessAlive, type PulumiLock, RENEW_EVERY_MS, type RunClaim, type RunRecord } from "../../backends";
import { UserGroupsError } from "../../wire/errors";

export {
  type AdoptEntry,
  type CreatedEntry,
  FILE_LEASE_TIMING,
  LEASE_TTL_MS,
  type LeaseStore,
  type LeaseTiming,
  parseRunRecord,
  RENEW_EVERY_MS,
  type RunClaim,
  type RunRecord,
  stackPath,
} from "../../backends";

/** Where this process stands: its host, whether a pid of this host runs, and whether it is a pulumi process. */
export interface Here {
  readonly host: string;
  readonly pidAlive: (pid: number) => boolean;
  /** For a Pulumi lock's pid: alive and a pulumi process (a reused pid is not the lock's holder). */
  readonly pulumiRunning?: (pid: number) => boolean;
}

export const HERE: Here = { host: hostname(), pidAlive: processAlive, pulumiRunning: pulumiProcessAlive };

export type LeaseState = "free" | "live" | "dead";

/**
 * A file lease's state from its record: released is free; same host and a
 * dead pid is dead at once; otherwise it is live, whatever its expiry says.
 * A file backend cannot fence Pulumi's checkpoint writes, so a holder that
 * stopped renewing (paused, stalled, cut off) is not provably stopped: its
 * engine may still write. Only a dead pid of this host proves that; another
 * host's run, or a live pid here, needs a person (`user-groups recover`).
 * (`now` stays for the callers that show how long ago the holder renewed.)
 */
export function leaseStateOf(record: RunRecord | undefined, _now: number, here: Here): LeaseState {
  if (record === undefined || record.released) return "free";
  if (record.host === here.host && !here.pidAlive(record.pid)) return "dead";
  return "live";
}


export type HolderVerdict =
  /** Its process runs (same host): wait for it. */
  | { readonly verdict: "live" }
  /** A run of ours with an older epoch took it: fenced, it can write nothing more (its process may still run). */
  | { readonly verdict: "fenced"; readonly claim: RunClaim }
  /** Provably gone: same host and its pid is dead, or a dead run of ours on its host held the lease when it was taken. */
  | { readonly verdict: "gone"; readonly claim?: RunClaim }
  /** Another host's, not proven to be a dead run of ours (a person's `pulumi up`, an older release): wait for it. */
  | { readonly verdict: "unknown" };

/**
 * Is a Pulumi lock's holder provably gone? `claims` are the dead runs of ours
 * (their lease ended without release). On another host the lock must have been
 * taken while such a run held the lease: both times come from that host's clock.
 */
export function classifyLockHolder(lock: PulumiLock, here: Here, claims: readonly RunClaim[], renewEveryMs = RENEW_EVERY_MS): HolderVerdict {
  const taken = lock.timestamp === undefined ? Number.NaN : Date.parse(lock.timestamp);
  const claim = claims.find(
    (c) => c.host === lock.hostname && Number.isFinite(taken) && taken >= c.startedAt && taken <= c.renewedAt + 2 * renewEveryMs,
  );
  // Claims carry an epoch only where the backend fences older epochs (PostgreSQL): that run can change nothing more.
  if (claim?.epoch !== undefined) return { verdict: "fenced", claim };
  if (lock.hostname === here.host) {
    if ((here.pulumiRunning ?? here.pidAlive)(lock.pid)) return { verdict: "live" };
    return claim ? { verdict: "gone", claim } : { verdict: "gone" };
  }
  return claim ? { verdict: "gone", claim } : { verdict: "unknown" };
}

/**
 * The record a new holder writes: itself, plus what the previous holder left.
 * A previous holder whose lease ended without release is a dead run: it joins
 * `unfinished`, and its own unfinished business and adopt list carry over.
 */
export function successorRecord(previous: RunRecord | undefined, me: RunClaim, ttlMs = LEASE_TTL_MS): RunRecord {
  const died = previous !== undefined && !previous.released;
  const { runId, host, pid, startedAt, renewedAt, epoch } = previous ?? me;
  const claim: RunClaim = { runId, host, pid, startedAt, renewedAt, ...(epoch !== undefined ? { epoch } : {}) };
  // The newest hundred are plenty: each ends with the takeover that deals with it.
  const unfinished = [...(previous?.unfinished ?? []), ...(died ? [claim] : [])].slice(-100);
  // A fleet's created entries stay until adopted: a holder that released adopted them first, a dead one left them to its successor.
  const created = previous?.created ?? [];
  // A checkpoint-free run's intents stay until a takeover settles them (engine/intents.ts).
  const intents = previous?.intents ?? [];
  const removing = previous?.removing ?? [];
  return {
    version: 1,
    ...me,
    expiresAt: me.renewedAt + ttlMs,
    released: false,
    unfinished,
    adopt: previous?.adopt ?? [],
    ...(created.length > 0 ? { created } : {}),
    ...(intents.length > 0 ? { intents } : {}),
    ...(removing.length > 0 ? { removing } : {}),
  };
}

export class RunLeaseLostError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "run_lease_lost",
      `The run lease of stack "${stackName}" was lost while this run held it (its connection to the backend broke, or it was not renewed in time); ` +
        "the run was stopped so that another can take over. Nothing is lost: ask again.",
    );
    this.name = "RunLeaseLostError";
  }
}

/** Why a run could not take the lease: the live run holding it (undefined while another is just taking it). Rides as a StackLockedError's cause. */
export class RunLeaseHeldError extends UserGroupsError {
  /** `retryInMs`: when the holder's lease expires unless renewed (PostgreSQL), so that a waiter tries again then. */
  constructor(
    readonly holder: RunRecord | undefined,
    readonly retryInMs?: number,
  ) {
    super(
      "run_lease_held",
      holder ? `the stack's run lease is held by pid ${holder.pid} on host "${holder.host}" since ${new Date(holder.startedAt).toISOString()}` : "another run is taking the stack's run lease",
    );
    this.name = "RunLeaseHeldError";
  }
}

/** The lease's rules as a store applies them (backends/backend.ts LeaseRules): the successor record; a file lease's holder live while its pid may run. */
export function leaseRules(here: Here = HERE): LeaseRules {
  return {
    successor: (previous, me, ttlMs) => successorRecord(previous, me, ttlMs),
    holderLive: (record, now) => leaseStateOf(record, now, here) === "live",
  };
}
