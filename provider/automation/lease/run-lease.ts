// The stack's run lease (docs/architecture.md, "Names and locks"): every run of
// ours holds it for as long as it may hold Pulumi's own stack lock, so a run
// that holds the lease and still finds a Pulumi lock knows that lock is a dead
// run's, or someone else's, and can tell which.
//
// - postgres:// backends: a row of our table with an epoch, the holder's run id
//   and an expiry on the database's clock (10 s past the last renewal, renewed
//   every 2 s); a killed holder's lease ends at once (its lease session is
//   gone), a paused or cut-off one's when it expires. Older epochs are fenced:
//   the backend refuses their engine's writes, their providers send nothing.
//   Waiters are served first come (backends/postgres/lease-store.ts; the file store likewise).
// - file:// backends: a lease file in the backend (0700 directory, 0600 file)
//   holding the holder's host, pid, run id and an expiry it renews. Nothing can
//   fence a file backend's writers, so only a dead pid of this host ends it; a
//   live pid, or another host's run, holds it until a person runs `recover`.
// - other backends: no lease (acquireRunLease answers undefined).
//
// Beside the lease lives the run record (the lease file itself; a row of our
// own table on PostgreSQL): who holds it, since when, the dead runs whose
// leftovers are not yet dealt with (`unfinished`), and the groups whose create
// a dead run left pending (`adopt`), so that an interrupted takeover is
// finished by the next holder. The record is never kept in the work directory,
// which a repository (and so a pull request) may hold.
import { randomUUID } from "node:crypto";
import { backendFor, type LeaseStoreOptions } from "../../backends";
import { type Clock, systemClock } from "../../clock";
import { StackLockedError } from "../backend";
import { FILE_LEASE_TIMING, type LeaseTiming, RunRecord, Here, HERE, RunLeaseLostError, RunLeaseHeldError, LeaseStore, leaseRules } from "./record";
import { currentLeaseWait, holderKind, LeaseWait } from "../telemetry";

/**
 * The lease store of a backend (its adapter's, backends/), with the lease's
 * rules; undefined for a backend without one (S3, Azure, GCS, Pulumi Cloud).
 * `here`: where this process stands (tests play other hosts).
 */
export function leaseStoreFor(
  backendUrl: string,
  project: string,
  stack: string,
  options: Omit<LeaseStoreOptions, "rules"> & { readonly here?: Here } = {},
): LeaseStore | undefined {
  const { here, ...rest } = options;
  return backendFor(backendUrl)?.leaseStore(project, stack, { ...rest, rules: leaseRules(here) });
}

/** Environment variable every run's engine and providers carry: which run they belong to. */
export const RUN_ID_ENV = "USER_GROUPS_RUN_ID";

/**
 * The lease held by this run: renewed in the background on the clock (every
 * `renewEveryMs` until released or lost); `signal` aborts when it is lost, so
 * that the run stops before another takes over.
 */
export class RunLease {
  private record: RunRecord;
  /** Ends the renewals (release). */
  private readonly stop = new AbortController();
  private readonly abort = new AbortController();
  private released = false;
  private writing: Promise<unknown> = Promise.resolve();
  private readonly timing: LeaseTiming;

  constructor(
    readonly store: LeaseStore,
    readonly stackName: string,
    record: RunRecord,
    private readonly clock: Clock = systemClock,
  ) {
    this.record = record;
    this.timing = store.timing ?? FILE_LEASE_TIMING;
    store.onLost = () => this.lose();
    void this.renewing();
  }

  /** Renews every renewEveryMs (not waiting for a slow renewal: the next one queues behind it, as `update` does). */
  private async renewing(): Promise<void> {
    const { ttlMs, renewEveryMs } = this.timing;
    while (!this.released && !this.lost) {
      try {
        // As the old unref'd interval: a held lease alone does not keep the process alive (its holder releases in a finally).
        await this.clock.sleep(renewEveryMs, this.stop.signal, { keepAlive: false });
      } catch {
        return; // released
      }
      // A renewal that fails (a backend hiccup) is tried again; one not renewed for nearly its lifetime is given up.
      void this.update({}).catch(() => {
        if (this.clock.now() - this.record.renewedAt > ttlMs - renewEveryMs) this.lose();
      });
    }
  }

  get runId(): string {
    return this.record.runId;
  }

  get current(): RunRecord {
    return this.record;
  }

  /** The lease's epoch (PostgreSQL), undefined where leases have none. */
  get epoch(): number | undefined {
    return this.record.epoch;
  }

  /** Aborted when the lease is lost. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get lost(): boolean {
    return this.abort.signal.aborted;
  }

  private lose(): void {
    if (!this.released && !this.abort.signal.aborted) this.abort.abort(new RunLeaseLostError(this.stackName));
  }

  /** Changes the record (renewing it); one write at a time. */
  update(change: Partial<Pick<RunRecord, "unfinished" | "adopt" | "created" | "intents" | "removing">>): Promise<void> {
    return this.updateWith(() => change);
  }

  /** Changes the record as `change` says of the record as it is once the writes before it are done (renewing it). */
  updateWith(change: (record: RunRecord) => Partial<Pick<RunRecord, "unfinished" | "adopt" | "created" | "intents" | "removing">>): Promise<void> {
    const next = this.writing.then(async () => {
      if (this.released || this.lost) return;
      const changed = change(this.record);
      const renewedAt = this.clock.now();
      const record: RunRecord = { ...this.record, ...changed, renewedAt, expiresAt: renewedAt + this.timing.ttlMs };
      if (!(await this.store.write(record))) {
        this.lose();
        return;
      }
      this.record = record;
    });
    this.writing = next.catch(() => undefined);
    return next;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.stop.abort();
    await this.writing;
    this.released = true;
    this.store.onLost = undefined;
    // A lost lease is not released: the next holder takes this run over as a dead one's (where the store can tell it so).
    if (this.lost && this.store.abandon) await this.store.abandon();
    else await this.store.release(this.record);
  }
}

export interface AcquireOptions {
  readonly here?: Here;
  readonly clock?: Clock;
  /** A person decided the holder is gone (`recover --break-lease`): take a file lease that still looks live. */
  readonly breakLive?: boolean;
}

/**
 * Takes the stack's run lease, or throws StackLockedError (naming its holder)
 * while a live run holds it: the lock-wait policy then waits and tries again.
 */
export async function acquireRunLease(store: LeaseStore, stackName: string, options: AcquireOptions = {}): Promise<RunLease> {
  const here = options.here ?? HERE;
  const clock = options.clock ?? systemClock;
  const startedAt = clock.now();
  // The wait this run is in (withLockWait's), or one of its own: its span and measurement (telemetry/).
  const wait = currentLeaseWait() ?? new LeaseWait(stackName);
  const outcome = await store.tryAcquire({ runId: randomUUID(), host: here.host, pid: process.pid, startedAt, renewedAt: startedAt }, { breakLive: options.breakLive === true });
  if (!outcome.acquired) {
    wait.refused(holderKind(outcome.holder, here.host), outcome.holder?.epoch);
    throw new StackLockedError(stackName, { cause: new RunLeaseHeldError(outcome.holder, outcome.retryInMs) });
  }
  wait.acquired(outcome.record.epoch);
  return new RunLease(store, stackName, outcome.record, clock);
}
