// The run record beside the lease and the rules that read it: who holds the
// stack, which dead runs left work behind, whether a Pulumi lock's holder is
// provably gone; the lease errors and what a lease store must do.
import type { PulumiLock } from "../model";
import { hostname } from "node:os";
import { z } from "zod";
import { processAlive } from "../../client/shared-state";
import { UserGroupsError } from "../../wire/errors";
import { pulumiProcessAlive } from "../backend";
import { assertValidStackName } from "../model";

/** How often a holder renews its record; a file lease's record says LEASE_TTL_MS past the last renewal. */
export const RENEW_EVERY_MS = 5_000;
export const LEASE_TTL_MS = 20_000;

/** A lease's timing: how long it lives past a renewal, how often its holder renews it. */
export interface LeaseTiming {
  readonly ttlMs: number;
  readonly renewEveryMs: number;
}

export const FILE_LEASE_TIMING: LeaseTiming = { ttlMs: LEASE_TTL_MS, renewEveryMs: RENEW_EVERY_MS };

const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** A run of ours that held the lease: enough to recognise its Pulumi lock and its processes. */
export interface RunClaim {
  readonly runId: string;
  readonly host: string;
  readonly pid: number;
  /** When the run took the lease (ms since the epoch, its host's clock). */
  readonly startedAt: number;
  /** Its last renewal (same clock). */
  readonly renewedAt: number;
  /**
   * The lease's epoch (PostgreSQL leases: one more for every holder). A run with
   * an epoch older than the current one is fenced: the backend refuses its
   * checkpoint writes and its provider processes send nothing more.
   */
  readonly epoch?: number;
}

/** A group whose create a dead run left pending: to be adopted from these inputs. */
export interface AdoptEntry {
  readonly resourceName: string;
  /** The inputs the dead run declared (from its pending create). */
  readonly inputs: Record<string, unknown>;
}

/** What the backend holds beside the lease (written out so that the declarations never mention zod). */
export interface RunRecord extends RunClaim {
  readonly version: 1;
  /** File leases: the lease ends then unless renewed (the holder's clock). */
  readonly expiresAt: number;
  /** The holder let go of it in good order. */
  readonly released: boolean;
  /** Dead runs whose Pulumi lock and pending operations are not dealt with yet. */
  readonly unfinished: readonly RunClaim[];
  readonly adopt: readonly AdoptEntry[];
}

const claimSchema = z.object({
  runId: z.string().min(1).max(100),
  host: z.string().max(255),
  pid: z.number().int(),
  startedAt: z.number(),
  renewedAt: z.number(),
  epoch: z.number().int().nonnegative().optional(),
});

const adoptEntrySchema = z.object({
  resourceName: z.string().min(1).max(1024),
  inputs: z.record(z.string(), z.unknown()),
});

const recordSchema = claimSchema.extend({
  version: z.literal(1),
  expiresAt: z.number(),
  released: z.boolean(),
  unfinished: z.array(claimSchema).max(1000),
  adopt: z.array(adoptEntrySchema).max(100_000),
}) satisfies z.ZodType<RunRecord>;

/** A run record read from the backend: outside data, checked before it decides anything. */
export function parseRunRecord(text: string): RunRecord | undefined {
  if (text.length > MAX_RECORD_BYTES) return undefined;
  try {
    const parsed = recordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

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
  return { version: 1, ...me, expiresAt: me.renewedAt + ttlMs, released: false, unfinished, adopt: previous?.adopt ?? [] };
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

/** Where a backend keeps leases, records, and Pulumi's locks. One per backend and stack. */
export interface LeaseStore {
  /** The lease, or who holds it. `previous` is the record of the last holder (dead or released). */
  tryAcquire(
    me: RunClaim,
    options?: { readonly breakLive?: boolean },
  ): Promise<{ readonly acquired: true; readonly record: RunRecord } | { readonly acquired: false; readonly holder?: RunRecord; readonly retryInMs?: number }>;
  /** Rewrites the held lease's record (renewal, adopt list); false when the lease is no longer ours. */
  write(record: RunRecord): Promise<boolean>;
  release(record: RunRecord): Promise<void>;
  pulumiLocks(): Promise<PulumiLock[]>;
  removePulumiLock(lock: PulumiLock): Promise<void>;
  close(): Promise<void>;
  /** Told when the lease is lost behind our back (PostgreSQL: its session ended, and a new one found the lease no longer ours). */
  onLost?: (() => void) | undefined;
  /** How long the lease lives past a renewal, how often to renew (file stores: FILE_LEASE_TIMING). */
  readonly timing?: LeaseTiming;
  /**
   * What the run's engine and provider processes get in their environment so
   * that the backend and the service refuse them once the lease has a newer
   * epoch (PostgreSQL); undefined where nothing can be fenced (file backends).
   * Among them PULUMI_BACKEND_URL: the engine's backend URL (no password in it).
   */
  fenceEnv?(record: RunRecord): Record<string, string> | undefined;
  /** A lost run lets go without release (PostgreSQL: its lease ends now, unreleased, so that the next holder takes its leftovers over). */
  abandon?(): Promise<void>;
}

/** org, project and stack of a stack name as the diy backend files it (a bare name: any org, our project). */
export function stackPath(stack: string, project: string): { org?: string; project: string; stack: string } {
  const parts = assertValidStackName(stack).split("/");
  if (parts.length === 3) return { org: parts[0]!, project: parts[1]!, stack: parts[2]! };
  if (parts.length === 2) return { org: parts[0]!, project, stack: parts[1]! };
  return { project, stack: parts[0]! };
}
