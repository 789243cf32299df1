// What a shared state backend must provide (docs/architecture.md, "Adding a
// backend"): one interface, implemented once per kind in a folder of its own
// (file/, postgres/) and registered in index.ts. Storage only: the rules that
// decide (the successor record, a holder's liveness, the shard plan, the slot
// arithmetic) stay in automation/lease, automation/shards and client/rate-budget,
// and reach a store as functions where it must apply one atomically.
//
// The primitives map onto an object store's conditional writes: a lease or a
// directory entry is taken with create-if-absent (a new generation, a missing
// key) and kept with compare-and-swap (the held generation, an ETag); a store
// whose answer to two racing writers is not "exactly one wins" cannot be one.
// test/backends/conformance.ts holds every adapter to it.
import type { Clock } from "../clock";
import { UserGroupsError } from "../wire/errors";
import type { LeaseTiming, RunClaim, RunRecord } from "./run-record";
import type { Waiter } from "./waiter";

/** A holder of Pulumi's own stack lock, as the lock says. */
export interface PulumiLock {
  /** The lock's file (file backend) or key (PostgreSQL). */
  readonly key: string;
  readonly pid: number;
  readonly hostname: string;
  readonly timestamp?: string;
}

/** The lease's rules, handed to the store (automation/lease/record.ts). */
export interface LeaseRules {
  /** The record a new holder writes: itself, plus what the previous holder left (`successorRecord`). */
  successor(previous: RunRecord | undefined, me: RunClaim, ttlMs: number): RunRecord;
  /**
   * Whether the holder of an unreleased record still holds a lease that cannot
   * expire by time (a backend that cannot fence its writers: file). Stores whose
   * leases expire on their own clock and are fenced (PostgreSQL) do not ask.
   */
  holderLive(record: RunRecord, now: number): boolean;
}

export interface LeaseStoreOptions {
  readonly rules: LeaseRules;
  /** This process's clock (renewal times, its place in the queue of waiters). */
  readonly clock?: Clock;
  /** The process as a waiter in the lease's queue, and its places in queues (default: PROCESS_WAITER, waiter.ts). */
  readonly waiter?: Waiter;
  /** Who waits in the lease's queue: the waiter's id by default; tests play several replicas. */
  readonly waiterId?: string;
  /** A waiter not seen for this long has stopped waiting. */
  readonly waiterStaleMs?: number;
  /** The lease's lifetime past a renewal and its renewal period (where the store lets them be chosen). */
  readonly timing?: LeaseTiming;
}

export type AcquireOutcome =
  | { readonly acquired: true; readonly record: RunRecord }
  /** `holder`: the live holder (undefined while another is just taking it); `retryInMs`: when to try again. */
  | { readonly acquired: false; readonly holder?: RunRecord; readonly retryInMs?: number };

/** Pulumi's own lock on one stack, as this backend stores it (a file per holder, a row per holder). */
export interface PulumiLockStore {
  pulumiLocks(): Promise<PulumiLock[]>;
  removePulumiLock(lock: PulumiLock): Promise<void>;
}

/**
 * A stack's run lease with epochs and renewal: of concurrent acquires exactly
 * one wins; waiters are served first come; only the holder may write (renew)
 * or release; a holder that stopped renewing is taken over, its record carried
 * into the successor's `unfinished`. One per backend and stack.
 */
export interface LeaseStore extends PulumiLockStore {
  /** The lease, or who holds it. `breakLive`: a person decided the holder is gone (`recover --break-lease`). */
  tryAcquire(me: RunClaim, options?: { readonly breakLive?: boolean }): Promise<AcquireOutcome>;
  /** Rewrites the held lease's record (renewal, adopt list); false when the lease is no longer ours. */
  write(record: RunRecord): Promise<boolean>;
  release(record: RunRecord): Promise<void>;
  close(): Promise<void>;
  /** Told when the lease is lost behind our back (PostgreSQL: its session ended, and a new one found the lease no longer ours). */
  onLost?: (() => void) | undefined;
  /** How long the lease lives past a renewal, how often to renew (file stores: FILE_LEASE_TIMING). */
  readonly timing?: LeaseTiming;
  /**
   * The fence: what the run's engine and provider processes get in their
   * environment so that the backend and the service refuse them once the lease
   * has a newer epoch (PostgreSQL); undefined where nothing can be fenced (file
   * backends). Among them PULUMI_BACKEND_URL: the engine's backend URL (no password in it).
   */
  fenceEnv?(record: RunRecord): Record<string, string> | undefined;
  /** The record as the backend holds it now, read without the lease (a fleet's list() reads its `created` entries). */
  peek?(): Promise<RunRecord | undefined>;
  /** A lost run lets go without release (its lease ends now, unreleased, so that the next holder takes its leftovers over). */
  abandon?(): Promise<void>;
  /**
   * The engine works on a private copy of the stack while the lease is held
   * (object stores: fenceEnv points it there), so it never meets Pulumi's lock
   * in the store: a lock there that the takeover does not clear refuses the run.
   */
  readonly privateEngine?: boolean;
}

/** The rule a directory store applies under its lock or transaction: the shards for names not yet assigned. */
export type AssignmentPlan = (assigned: ReadonlyMap<string, number>) => Map<string, number>;

/**
 * The storage of a stack's shard directory (group -> shard). Each call is one
 * atomic step against every other writer: `claim` is create-if-absent per
 * entry, `forget` a delete only where the entry still names that shard.
 */
export interface DirectoryStore {
  /** Every assignment. */
  read(): Promise<Map<string, number>>;
  /** Writes the entries `plan` gives for names without one, marks the directory initialized, answers the plan. */
  assign(plan: AssignmentPlan): Promise<Map<string, number>>;
  /**
   * Once per stack: the groups its root stack already holds (an older version's
   * stack) as shard 0's. Nothing is written when `rootHeld` answers undefined
   * (no root stack); the first assignment marks the directory initialized.
   */
  initialize(rootHeld: () => Promise<readonly string[] | undefined>): Promise<void>;
  /** Drops the entries of these names that name `shard` (only those). */
  forget(names: readonly string[], shard: number): Promise<void>;
  /** Writes `shard` where a name has no entry; answers the names whose entry names another shard. */
  claim(names: readonly string[], shard: number): Promise<Map<string, number>>;
  /** Sets entries whatever they said. */
  repair(entries: ReadonlyMap<string, number>): Promise<void>;
  /** The names whose entry names `shard`. */
  entriesOf(shard: number): Promise<string[]>;
  /** The shards other than 0 whose Pulumi stack exists in the backend. */
  existingShards(): Promise<number[]>;
  close(): Promise<void>;
}

export interface DirectoryStoreOptions {
  /** The error for a backend that cannot be reached (`detail` has no secret; `place` the backend's host or path). */
  readonly unreachable?: (detail: string, connectionString: string) => Error;
}

/** The slot arithmetic a slot store applies atomically (client/rate-budget/budget.ts). */
export interface SlotRules {
  /** The slot of a booking at `now`: when it begins, and the next free slot after it. */
  book(nextFree: number | undefined, now: number, intervalMs: number): { readonly at: number; readonly nextFree: number };
  /** The next free slot after a hold of `holdMs` from `now`. */
  hold(nextFree: number | undefined, now: number, holdMs: number): number;
  /** A next free slot further ahead than this is dropped; a hold is capped at maxHoldMs (stores that apply the rule in their own language). */
  readonly maxAheadMs: number;
  readonly maxHoldMs: number;
}

/** Where a budget's next free slot is kept. Each call is one atomic step, whoever else books at the same time. */
export interface SlotStore {
  /** Books the next slot of `budgetId`: how long from now (the store's clock) until it begins, in ms. */
  book(budgetId: string, intervalMs: number): Promise<number>;
  /** No slot of `budgetId` begins within `holdMs` from now (a 429's Retry-After). */
  hold(budgetId: string, holdMs: number): Promise<void>;
  close(): Promise<void>;
}

/** The check a run's provider process makes before every request: is the run's lease still current? */
export interface RunFence {
  /** Resolves when the run's lease is current and will live at least FENCE_MARGIN_MS; else throws RunFencedError. */
  check(): Promise<void>;
}

/** A request of a run that no longer holds its stack, not sent (`run_fenced`, retryable). */
export class RunFencedError extends UserGroupsError {
  constructor(detail: string) {
    super(
      "run_fenced",
      `Request not sent: ${detail}. Another run holds (or is about to take) this stack; nothing of this run reaches the service any more. ` +
        "Nothing is lost: ask again.",
    );
    this.name = "RunFencedError";
  }
}

/** One backend (one URL): the stores of its stacks. */
export interface SharedBackend {
  /** The adapter's name ("file", "postgres"). */
  readonly kind: string;
  /** A stack's run lease (and Pulumi's lock of that stack, and the fence). */
  leaseStore(project: string, stack: string, options: LeaseStoreOptions): LeaseStore;
  /** A stack's shard directory. */
  shardDirectory(project: string, stack: string, options?: DirectoryStoreOptions): DirectoryStore;
  /** Where a run's provider processes share their key's rate budget: what they find in their environment (RATE_BUDGET_ENV). */
  rateBudgetEnv(): Record<string, string>;
}

/** A kind of backend, as the registry (index.ts) knows it. */
export interface BackendAdapter {
  readonly kind: string;
  /** Whether a backend URL (or a rate budget location this adapter wrote) is of this kind: by its scheme. */
  handles(url: string): boolean;
  open(backendUrl: string): SharedBackend;
  /** In a provider process: the slot store a budget location of this kind names (undefined: malformed). */
  slotStoreAt(location: string, table: string | undefined, rules: SlotRules): SlotStore | undefined;
  /** In a provider process: the run's fence its environment names, if it names one of this kind. */
  runFenceFromEnv?(env: NodeJS.ProcessEnv): RunFence | undefined;
  /**
   * Before Pulumi is asked about a stack at this URL: the backend is there, takes the credentials and honours the
   * conditions our leases need (object stores: one coded refusal otherwise, not Pulumi's words for it). Opens nothing
   * that outlives it.
   */
  check?(url: string): Promise<void>;
}

/** The variables a run's provider processes find their shared rate budget by (set from the stack's backend). */
export const RATE_BUDGET_ENV = {
  /** The key's allowance, REQUESTS/SECONDS (default 180/60), or `off`. */
  limit: "USER_GROUPS_RATE_LIMIT",
  /** Where the budget is shared: `postgres://…` (no password: PGPASSWORD) or `file:///abs/dir`; unset: this process alone. */
  store: "USER_GROUPS_RATE_BUDGET",
  /** The PostgreSQL table of the budget (default user_groups_rate_budget). */
  table: "USER_GROUPS_RATE_BUDGET_TABLE",
} as const;
