// The run lease of a PostgreSQL backend: a row per stack in our table
// `user_groups_run_leases` with an epoch that grows with every holder, the
// holder's run id and an expiry on the DATABASE's clock; the run record in
// `user_groups_run_records` beside it; and the fence that makes expiry safe.
//
// - acquire: one transaction takes a free, released or expired lease (or one
//   whose holder's lease session is gone: a killed holder) and increments the
//   epoch; renew: UPDATE ... WHERE epoch = mine AND NOT expired (0 rows: lost).
//   Waiters are served first come (the lease's waiters table): a waiter
//   (a process) registers when first refused (`since`, the database's clock) and refreshes
//   `seen_at` at each try; the lease goes to the live waiter (seen within
//   PG_WAITER_STALE_MS) with the earliest `since`, in the same transaction and
//   under the same row lock as the acquire, so that a replica that always has
//   work cannot take the lease again and again ahead of one that waited longer.
//   A holder that has not renewed for PG_LEASE_TIMING.ttlMs loses the lease even
//   while its connection lives (a paused process, a partition). A holder whose
//   lease session is cut (a reset, a restart) does not lose it by that alone: a
//   new session asks whether its epoch is still current and unexpired, renews and
//   names itself again; meanwhile another replica may take the lease as an
//   unattended one, and then the epoch says the holder lost it. A statement cut
//   under a call is tried once more on a new session (acquire, renewal, locks),
//   so that one cut costs a retry, not a caller's error (LeaseUnreachableError,
//   `run_lease_unreachable`, retryable, when the second try fails too).
// - fence, state (fence-trigger.ts): a trigger on Pulumi's table refuses the
//   writes of a session named as the engine of one of our runs (`ug-run:<lease
//   id>:<epoch>`, put into the engine's backend URL) unless that epoch is the
//   lease's current one and unexpired. Go's database/sql reconnects with the
//   same URL, so the name, and the refusal, survive reconnection.
// - fence, service: the run's provider processes check the epoch before every
//   request (run-fence.ts).
// - on taking over a lease from a run that did not release it, the new holder
//   ends that run's sessions (lease, engine, fence checks): not what fences it
//   (the trigger and the checks are), but it stops it sooner.
import { type Clock, systemClock } from "../../clock";
import type { AcquireOutcome, LeaseRules, LeaseStore, LeaseStoreOptions, PulumiLock } from "../backend";
import { engineBackendEnv, withApplicationName } from "../backend-url";
import { type LeaseTiming, parseRunRecord, type RunClaim, type RunRecord } from "../run-record";
import { assertValidStackName } from "../stack-name";
import { PROCESS_WAITER, type Waiter } from "../waiter";
import {
  endStaleSessions,
  ENGINE_SESSION_PREFIX,
  ensureLeaseTables,
  LEASE_SESSION_PREFIX,
  LeaseUnreachableError,
  leaseIdOf,
  leaseOwnTables,
  PG_LEASE_TIMING,
  PG_WAITER_STALE_MS,
  type PgClient,
  pulumiLockRows,
  QUEUED_RETRY_MS,
} from "./lease-tables";
import { RUN_FENCE_ENV } from "./run-fence";
import { PostgresSession } from "./session";
import { postgresTarget } from "./target";


/**
 * A PostgreSQL backend's lease (see the file header). Connects with the backend
 * URL's own credentials; never prints them.
 */
export class PostgresLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  readonly timing: LeaseTiming;
  private held: { readonly epoch: number; readonly runId: string } | undefined;
  /** Whether the open lease session's name carries the held epoch (a new session after a cut does not yet). */
  private named = false;
  /** The session's statements, one after another in the order asked (once). */
  private turns: Promise<void> = Promise.resolve();
  private readonly session: PostgresSession;
  private readonly target: ReturnType<typeof postgresTarget>;
  private readonly leaseId: string;
  private readonly stackKey: string;
  /** Who waits, in the lease's queue of waiters: this process (PROCESS_WAITER), or as told (tests play several replicas). */
  private readonly waiterId: string;
  private readonly waiter: Waiter;
  private readonly rules: LeaseRules;
  private readonly waiterStaleMs: number;
  /** This process's clock: when it last tried, for its place in the queue (the lease itself is on the database's clock). */
  private readonly clock: Clock;

  constructor(
    private readonly backendUrl: string,
    private readonly project: string,
    private readonly stack: string,
    options: LeaseStoreOptions,
  ) {
    this.timing = options.timing ?? PG_LEASE_TIMING;
    this.rules = options.rules;
    this.clock = options.clock ?? systemClock;
    this.waiter = options.waiter ?? PROCESS_WAITER;
    this.waiterId = options.waiterId ?? this.waiter.id;
    this.waiterStaleMs = options.waiterStaleMs ?? PG_WAITER_STALE_MS;
    this.target = postgresTarget(backendUrl);
    this.leaseId = leaseIdOf(this.target.pulumiTable, project, assertValidStackName(stack));
    this.stackKey = `${project}/${stack}`;
    this.session = new PostgresSession({
      connectionString: this.target.connectionString,
      applicationName: LEASE_SESSION_PREFIX + this.leaseId,
      keepAlive: true,
      queryTimeoutMs: 10_000,
      setup: async (client) => {
        for (const setting of ["tcp_keepalives_idle = 10", "tcp_keepalives_interval = 5", "tcp_keepalives_count = 3"]) {
          await client.query(`SET ${setting}`).catch(() => undefined);
        }
        await ensureLeaseTables(client, this.target);
      },
      ownTables: leaseOwnTables(this.target),
      connectTimeoutMs: 10_000,
      unreachable: (_error, detail, during) => new LeaseUnreachableError(detail, during === "query"),
      // A lease session cut under us does not lose the lease by itself: the next renewal, on a new session, keeps
      // it while it is ours and unexpired (the epoch decides, not the session), or finds it lost.
      onDropped: () => {
        this.named = false;
        if (this.held) void this.recheck(this.held);
      },
    });
  }

  private connection(): Promise<PgClient> {
    return this.session.connection();
  }

  /**
   * Runs `work` on the session; a session cut under it (a reset, a restart, a
   * black hole past the query timeout) is tried once more on a new session, so
   * that a single cut costs a retry, not a caller's error. Only for work that
   * may run twice: a statement or transaction whose second run finds what the
   * first one did (every use below checks the epoch, or only reads).
   */
  private once<T>(work: (client: PgClient) => Promise<T>): Promise<T> {
    // One statement at a time on the one session: a fleet's list() peeks while a renewal or a lock read is under way,
    // and pg would otherwise queue them itself with a deprecation warning (an error in pg 9), or interleave them with a transaction.
    const turn = this.turns.then(() => this.onceNow(work));
    this.turns = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  private async onceNow<T>(work: (client: PgClient) => Promise<T>): Promise<T> {
    try {
      return await work(await this.connection());
    } catch (error) {
      if (!(error instanceof LeaseUnreachableError) || !error.cut) throw error;
      return work(await this.connection());
    }
  }

  /** Names the session for the held epoch (after a cut, a new session is not yet): a successor then sees the holder is there. */
  private async nameSession(client: PgClient, epoch: number): Promise<void> {
    if (this.named) return;
    await client.query("SELECT set_config('application_name', $1, false)", [`${LEASE_SESSION_PREFIX}${this.leaseId}:${epoch}`]);
    this.named = true;
  }

  /**
   * The lease session ended behind our back (a cut, a restart, or a successor
   * ending it): asks on a new session whether the lease is still ours; if it is
   * not, it is lost now (not at the next renewal). If the backend cannot tell, the renewals decide.
   */
  private async recheck(held: { readonly epoch: number; readonly runId: string }): Promise<void> {
    try {
      const ours = await this.once(async (client) => {
        const result = await client.query<{ ok: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM ${this.target.leaseTable} WHERE stack_key = $1 AND epoch = $2 AND run_id = $3 AND NOT released AND expires_at > now()) AS ok`,
          [this.stackKey, held.epoch, held.runId],
        );
        if (result.rows[0]?.ok === true) await this.nameSession(client, held.epoch);
        return result.rows[0]?.ok === true;
      });
      if (!ours && this.held === held) {
        this.held = undefined;
        this.onLost?.();
      }
    } catch {
      // unreachable: the renewals decide (RunLease gives the lease up once it has not been renewed for nearly its lifetime)
    }
  }

  private async readRecord(client: PgClient): Promise<RunRecord | undefined> {
    const result = await client.query<{ record: unknown }>(`SELECT record FROM ${this.target.recordTable} WHERE stack_key = $1`, [this.stackKey]);
    const row = result.rows[0];
    return row === undefined ? undefined : parseRunRecord(JSON.stringify(row.record));
  }

  peek(): Promise<RunRecord | undefined> {
    return this.once((client) => this.readRecord(client));
  }

  /**
   * Takes the lease when it is free, released, expired (the database's clock),
   * or its holder's lease session is gone (a killed holder): the epoch moves on.
   */
  tryAcquire(me: RunClaim): Promise<AcquireOutcome> {
    // Tried again on a new session after a cut: a first try that did commit left a lease of ours with an older
    // epoch, which the second try takes over as any unattended lease (its session is the cut one).
    return this.once((client) => this.acquireOn(client, me));
  }

  private async acquireOn(client: PgClient, me: RunClaim): Promise<AcquireOutcome> {
    await client.query("BEGIN");
    let taken: { record: RunRecord; epoch: number; stale: boolean } | undefined;
    let holder: RunRecord | undefined;
    let retryInMs: number | undefined;
    try {
      await client.query(
        `INSERT INTO ${this.target.leaseTable} (stack_key, lease_id, epoch, run_id, expires_at, released) VALUES ($1, $2, 0, '', now(), true) ON CONFLICT (stack_key) DO NOTHING`,
        [this.stackKey, this.leaseId],
      );
      const row = (
        await client.query<{ epoch: string; lease_id: string; released: boolean; unexpired: boolean; left_ms: number }>(
          `SELECT l.epoch::text AS epoch, l.lease_id, l.released, l.expires_at > clock_timestamp() AS unexpired,
             (EXTRACT(EPOCH FROM (l.expires_at - clock_timestamp())) * 1000)::float8 AS left_ms
           FROM ${this.target.leaseTable} l WHERE l.stack_key = $1 FOR UPDATE`,
          [this.stackKey],
        )
      ).rows[0]!;
      // Who is connected, read only now that the row is ours: a view of pg_stat_activity taken before waiting for the
      // row (PostgreSQL keeps one per transaction) misses the session of a waiter that took the lease meanwhile, and
      // every waiter woken at an expiry would take the lease in turn, each fencing the one before.
      await client.query("SELECT pg_stat_clear_snapshot()");
      const attended = (
        await client.query<{ attended: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1) AS attended", [
          `${LEASE_SESSION_PREFIX}${row.lease_id}:${row.epoch}`,
        ])
      ).rows[0]!.attended;
      const previous = await this.readRecord(client);
      // First come, first served: sweep the waiters that stopped trying, put ourselves in the queue (or say we are
      // still there), and see whether a live waiter came before us. All under the lease row's lock.
      const stale = [this.stackKey, this.waiterStaleMs];
      await client.query(`DELETE FROM ${this.target.waiterTable} WHERE stack_key = $1 AND seen_at < clock_timestamp() - $2 * interval '1 millisecond'`, stale);
      const placeKey = `${this.target.waiterTable}\u0000${this.stackKey}\u0000${this.waiterId}`;
      const place = this.waiter.places.get(placeKey);
      const kept = place !== undefined && typeof place.since === "string" && this.clock.now() - place.triedAt < this.waiterStaleMs ? place.since : null;
      const queue = (
        await client.query<{ ahead: boolean; since: string }>(
          `WITH me AS (
             INSERT INTO ${this.target.waiterTable} (stack_key, waiter_id, since, seen_at)
             VALUES ($1, $2, LEAST(coalesce($3::timestamptz, clock_timestamp()), clock_timestamp()), clock_timestamp())
             ON CONFLICT (stack_key, waiter_id) DO UPDATE SET seen_at = clock_timestamp() RETURNING since
           )
           SELECT EXISTS (SELECT 1 FROM ${this.target.waiterTable} w, me WHERE w.stack_key = $1 AND w.waiter_id <> $2
             AND (w.since, w.waiter_id) < (me.since, $2::text)) AS ahead, (SELECT since::text FROM me) AS since`,
          [this.stackKey, this.waiterId, kept],
        )
      ).rows[0]!;
      const queued = queue.ahead;
      this.waiter.places.set(placeKey, { since: queue.since, triedAt: this.clock.now() });
      if (!row.released && row.unexpired && attended) {
        holder = previous;
        retryInMs = Math.max(0, Math.ceil(row.left_ms)) + 50;
      } else if (queued) {
        // Free, but another waiter came first: it takes the lease at its next try (or stops counting once stale).
        retryInMs = QUEUED_RETRY_MS;
      } else {
        const epoch = Number(row.epoch) + 1;
        const record = this.rules.successor(previous, { ...me, epoch }, this.timing.ttlMs);
        await client.query(
          `UPDATE ${this.target.leaseTable} SET lease_id = $2, epoch = $3, run_id = $4, expires_at = now() + $5 * interval '1 millisecond', released = false, updated_at = now() WHERE stack_key = $1`,
          [this.stackKey, this.leaseId, epoch, me.runId, this.timing.ttlMs],
        );
        await this.upsert(client, record);
        await client.query(`DELETE FROM ${this.target.waiterTable} WHERE stack_key = $1 AND waiter_id = $2`, [this.stackKey, this.waiterId]);
        this.waiter.places.delete(placeKey);
        // Our lease session's name says which epoch it holds: a successor sees whether we are still there.
        await client.query("SELECT set_config('application_name', $1, false)", [`${LEASE_SESSION_PREFIX}${this.leaseId}:${epoch}`]);
        taken = { record, epoch, stale: !row.released };
      }
      // A refusal commits too: it keeps our place in the queue.
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
    if (!taken) return { acquired: false as const, ...(holder ? { holder } : {}), ...(retryInMs !== undefined ? { retryInMs } : {}) };
    this.held = { epoch: taken.epoch, runId: me.runId };
    this.named = true;
    if (taken.stale) await endStaleSessions(client, this.leaseId, taken.epoch).catch(() => undefined);
    return { acquired: true as const, record: taken.record };
  }


  private async upsert(client: PgClient, record: RunRecord): Promise<void> {
    await client.query(
      `INSERT INTO ${this.target.recordTable} (stack_key, record) VALUES ($1, $2) ON CONFLICT (stack_key) DO UPDATE SET record = $2, updated_at = now()`,
      [this.stackKey, JSON.stringify(record)],
    );
  }

  /** Renews the lease (and rewrites the record) only while it is ours and unexpired: false when it is lost. */
  async write(record: RunRecord): Promise<boolean> {
    const held = this.held;
    if (held === undefined) return false;
    const renewed = await this.once((client) => this.renewOn(client, held, record));
    if (!renewed && this.held === held) this.held = undefined;
    return renewed;
  }

  private async renewOn(client: PgClient, held: { readonly epoch: number; readonly runId: string }, record: RunRecord): Promise<boolean> {
    const result = await client.query<{ renewed: string }>(
      `WITH renewed AS (
         UPDATE ${this.target.leaseTable} SET expires_at = now() + $4 * interval '1 millisecond', updated_at = now()
         WHERE stack_key = $1 AND epoch = $2 AND run_id = $3 AND NOT released AND expires_at > now() RETURNING stack_key
       ), written AS (
         UPDATE ${this.target.recordTable} SET record = $5, updated_at = now() WHERE stack_key IN (SELECT stack_key FROM renewed) RETURNING 1
       )
       SELECT (SELECT count(*) FROM renewed)::text AS renewed`,
      [this.stackKey, held.epoch, held.runId, this.timing.ttlMs, JSON.stringify(record)],
    );
    if (result.rows[0]?.renewed !== "1") return false;
    // Renewed on a new session (the old one was cut): named for its epoch.
    await this.nameSession(client, held.epoch);
    return true;
  }

  /** Our lease session's name back to no epoch: a later holder's takeover has no reason to end it. */
  private async unnamed(client: PgClient): Promise<void> {
    this.named = false;
    await client.query("SELECT set_config('application_name', $1, false)", [LEASE_SESSION_PREFIX + this.leaseId]).catch(() => undefined);
  }

  /** Lets go in good order: only while still ours and unexpired (else the next holder takes it over as a dead run's). */
  async release(record: RunRecord): Promise<void> {
    const client = this.session.current;
    const held = this.held;
    this.held = undefined;
    if (held === undefined || client === undefined) return;
    // A session cut now leaves the lease to expire (or to be taken as an unattended one): the run's work is done.
    await ignoreCut(client.query(
      `WITH released AS (
         UPDATE ${this.target.leaseTable} SET released = true, expires_at = now(), updated_at = now()
         WHERE stack_key = $1 AND epoch = $2 AND run_id = $3 AND NOT released AND expires_at > now() RETURNING stack_key
       )
       UPDATE ${this.target.recordTable} SET record = $4, updated_at = now() WHERE stack_key IN (SELECT stack_key FROM released)`,
      [this.stackKey, held.epoch, held.runId, JSON.stringify({ ...record, released: true })],
    ));
    await this.unnamed(client);
  }

  /** A lost run lets go without release: its lease ends now, and the next holder finds it unfinished (and fenced). */
  async abandon(): Promise<void> {
    const client = this.session.current;
    const held = this.held;
    this.held = undefined;
    if (held === undefined || client === undefined) return;
    await ignoreCut(client.query(
      `UPDATE ${this.target.leaseTable} SET expires_at = now(), updated_at = now() WHERE stack_key = $1 AND epoch = $2 AND run_id = $3 AND NOT released AND expires_at > now()`,
      [this.stackKey, held.epoch, held.runId],
    ));
    await this.unnamed(client);
  }

  /** The engine's backend URL naming this run's epoch, and the provider processes' fence. */
  fenceEnv(record: RunRecord): Record<string, string> | undefined {
    if (record.epoch === undefined) return undefined;
    const engineUrl = engineBackendEnv(this.backendUrl).PULUMI_BACKEND_URL;
    return {
      PULUMI_BACKEND_URL: withApplicationName(engineUrl, `${ENGINE_SESSION_PREFIX}${this.leaseId}:${record.epoch}`),
      [RUN_FENCE_ENV.lease]: `${this.leaseId}:${record.epoch}`,
      [RUN_FENCE_ENV.db]: postgresTarget(engineUrl).connectionString,
      [RUN_FENCE_ENV.table]: this.target.leaseTable,
    };
  }

  pulumiLocks(): Promise<PulumiLock[]> {
    return this.once((client) => pulumiLockRows(client, this.target, this.project, this.stack));
  }

  async removePulumiLock(lock: PulumiLock): Promise<void> {
    await this.once((client) => client.query(`DELETE FROM ${this.target.pulumiTable} WHERE key = $1`, [lock.key]));
  }

  async close(): Promise<void> {
    this.held = undefined;
    // Out of the queue: a run that gave up (a CLI run that does not wait, a process on its way out) holds nobody up.
    // The place is remembered: this process's next try within the stale window takes it back (a whole-set run opens
    // a new store for each try of its lock wait).
    const client = this.session.current;
    if (client !== undefined) {
      // Not waited for past a second: a session cut off (a black hole) would hold the close up to its query timeout.
      const leaving = client.query(`DELETE FROM ${this.target.waiterTable} WHERE stack_key = $1 AND waiter_id = $2`, [this.stackKey, this.waiterId]).catch(() => undefined);
      const waited = new AbortController();
      await Promise.race([leaving, this.clock.sleep(1_000, waited.signal).catch(() => undefined)]);
      waited.abort();
    }
    await this.session.close();
  }
}

/** A statement whose session may be cut meanwhile: a cut is no error of the caller's (the lease then ends by itself). */
async function ignoreCut(statement: Promise<unknown>): Promise<void> {
  try {
    await statement;
  } catch (error) {
    if (!(error instanceof LeaseUnreachableError)) throw error;
  }
}
