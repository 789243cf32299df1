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
// - fence, state (postgres-fence.ts): a trigger on Pulumi's table refuses the
//   writes of a session named as the engine of one of our runs (`ug-run:<lease
//   id>:<epoch>`, put into the engine's backend URL) unless that epoch is the
//   lease's current one and unexpired. Go's database/sql reconnects with the
//   same URL, so the name, and the refusal, survive reconnection.
// - fence, service: the run's provider processes check the epoch before every
//   request (client/run-fence).
// - on taking over a lease from a run that did not release it, the new holder
//   ends that run's sessions (lease, engine, fence checks): not what fences it
//   (the trigger and the checks are), but it stops it sooner.
import type { PulumiLock } from "../model";
import { createHash, randomUUID } from "node:crypto";
import { createTablesIfMissing, PostgresSession, postgresTarget, type SqlClient } from "../../client/shared-state";
import { FENCE_SESSION_PREFIX, RUN_FENCE_ENV } from "../../client/run-fence";
import { UserGroupsError } from "../../wire/errors";
import { engineBackendEnv, withApplicationName } from "../backend";
import { assertValidStackName } from "../model";
import { type LeaseTiming, RunClaim, RunRecord, parseRunRecord, successorRecord, LeaseStore, stackPath } from "./record";
import { ensureRunFence } from "./postgres-fence";
import { type Clock, systemClock } from "../../clock";

/** The lease's id in session names: 16 hex digits of the table, project and stack. */
export function leaseIdOf(pulumiTable: string, project: string, stack: string): string {
  return createHash("sha256").update(`user-groups run lease\u0000${pulumiTable}\u0000${project}\u0000${stack}`).digest("hex").slice(0, 16);
}

/**
 * A PostgreSQL lease lives 10 s past its last renewal; its holder renews every
 * 2 s. Another replica takes it within ~10-15 s of the last renewal and then
 * needs ~10 s (takeover and its own run, measured on a loaded 2-core machine)
 * to serve: within 30 s. Its providers stop sending 3 s before it expires
 * (client/run-fence FENCE_MARGIN_MS), so up to 3 renewals may fail in a row
 * before a live run's requests wait.
 */
export const PG_LEASE_TIMING: LeaseTiming = { ttlMs: 10_000, renewEveryMs: 2_000 };

/**
 * A waiter not seen for this long (on the database's clock) has stopped waiting
 * (gave up, died, was cut off): it no longer keeps later waiters from the lease
 * and its row is swept. Above the longest pause between two tries of a live
 * waiter (the lock wait's backoff is at most 5 s, plus the try itself).
 */
export const PG_WAITER_STALE_MS = 8_000;

/**
 * This process's id in the lease's queue of waiters: a waiter is a replica (a
 * process), not a store, so that a whole-set run, which opens a new store for
 * each try of its lock wait (shards/run-shard.ts), keeps its place between tries.
 */
export const PROCESS_WAITER_ID = randomUUID();

/**
 * Where this process stood in each lease's queue (its `since`, the database's
 * clock, as text) and when it last tried (this process's clock). A store that
 * closes leaves the queue (a run that gave up must not hold others up), and the
 * next store of this process that tries within the stale window takes its place back.
 */
const placesInQueue = new Map<string, { readonly since: string; readonly triedAt: number }>();

/** How soon a waiter refused only for an earlier waiter tries again (the earlier one takes the lease at its next try). */
const QUEUED_RETRY_MS = 500;

/** Session names (application_name): a run's engine, a run's lease session. */
export const ENGINE_SESSION_PREFIX = "ug-run:";
export const LEASE_SESSION_PREFIX = "ug-lease:";

type PgClient = SqlClient;

/**
 * The run lease's PostgreSQL backend could not be reached, or the lease
 * session was cut under a statement (`cut`): retryable (`run_lease_unreachable`).
 */
export class LeaseUnreachableError extends UserGroupsError {
  constructor(
    detail: string,
    readonly cut: boolean,
  ) {
    super("run_lease_unreachable", `Cannot reach the PostgreSQL backend for the run lease: ${detail}`);
    this.name = "LeaseUnreachableError";
  }
}

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
  private readonly session: PostgresSession;
  private readonly target: ReturnType<typeof postgresTarget>;
  private readonly leaseId: string;
  private readonly stackKey: string;
  /** Who waits, in the lease's queue of waiters: this process (PROCESS_WAITER_ID), or as told (tests play several replicas). */
  private readonly waiterId: string;
  private readonly waiterStaleMs: number;
  /** This process's clock: when it last tried, for its place in the queue (the lease itself is on the database's clock). */
  private readonly clock: Clock;

  constructor(
    private readonly backendUrl: string,
    private readonly project: string,
    private readonly stack: string,
    timing: LeaseTiming = PG_LEASE_TIMING,
    options: { readonly waiterStaleMs?: number; readonly waiterId?: string; readonly clock?: Clock } = {},
  ) {
    this.timing = timing;
    this.clock = options.clock ?? systemClock;
    this.waiterId = options.waiterId ?? PROCESS_WAITER_ID;
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
        await this.ensureTables(client);
      },
      ownTables: [
        { table: this.target.recordTable, columns: { stack_key: "text", record: "jsonb", updated_at: "timestamp with time zone" } },
        {
          table: this.target.leaseTable,
          columns: {
            stack_key: "text",
            lease_id: "text",
            epoch: "bigint",
            run_id: "text",
            expires_at: "timestamp with time zone",
            released: "boolean",
            updated_at: "timestamp with time zone",
          },
        },
        {
          table: this.target.waiterTable,
          columns: { stack_key: "text", waiter_id: "text", since: "timestamp with time zone", seen_at: "timestamp with time zone" },
        },
      ],
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
  private async once<T>(work: (client: PgClient) => Promise<T>): Promise<T> {
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

  private async ensureTables(client: PgClient): Promise<void> {
    await createTablesIfMissing(client, [
      `CREATE TABLE IF NOT EXISTS ${this.target.recordTable} (stack_key TEXT PRIMARY KEY, record JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
      `CREATE TABLE IF NOT EXISTS ${this.target.leaseTable} (stack_key TEXT PRIMARY KEY, lease_id TEXT NOT NULL, epoch BIGINT NOT NULL, ` +
        `run_id TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, released BOOLEAN NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
      `CREATE TABLE IF NOT EXISTS ${this.target.waiterTable} (stack_key TEXT NOT NULL, waiter_id TEXT NOT NULL, since TIMESTAMPTZ NOT NULL, ` +
        `seen_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (stack_key, waiter_id))`,
      // Pulumi's own table, exactly as Pulumi creates it (its CREATE ... IF NOT EXISTS is then a no-op), so that the fence is on it before its first write.
      `CREATE TABLE IF NOT EXISTS ${this.target.pulumiTable} (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())`,
    ]);
    await ensureRunFence(client, this.target);
  }

  private async readRecord(client: PgClient): Promise<RunRecord | undefined> {
    const result = await client.query<{ record: unknown }>(`SELECT record FROM ${this.target.recordTable} WHERE stack_key = $1`, [this.stackKey]);
    const row = result.rows[0];
    return row === undefined ? undefined : parseRunRecord(JSON.stringify(row.record));
  }

  /**
   * Takes the lease when it is free, released, expired (the database's clock),
   * or its holder's lease session is gone (a killed holder): the epoch moves on.
   */
  tryAcquire(me: RunClaim) {
    // Tried again on a new session after a cut: a first try that did commit left a lease of ours with an older
    // epoch, which the second try takes over as any unattended lease (its session is the cut one).
    return this.once((client) => this.acquireOn(client, me));
  }

  private async acquireOn(client: PgClient, me: RunClaim) {
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
      const place = placesInQueue.get(placeKey);
      const kept = place !== undefined && this.clock.now() - place.triedAt < this.waiterStaleMs ? place.since : null;
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
      placesInQueue.set(placeKey, { since: queue.since, triedAt: this.clock.now() });
      if (!row.released && row.unexpired && attended) {
        holder = previous;
        retryInMs = Math.max(0, Math.ceil(row.left_ms)) + 50;
      } else if (queued) {
        // Free, but another waiter came first: it takes the lease at its next try (or stops counting once stale).
        retryInMs = QUEUED_RETRY_MS;
      } else {
        const epoch = Number(row.epoch) + 1;
        const record = successorRecord(previous, { ...me, epoch }, this.timing.ttlMs);
        await client.query(
          `UPDATE ${this.target.leaseTable} SET lease_id = $2, epoch = $3, run_id = $4, expires_at = now() + $5 * interval '1 millisecond', released = false, updated_at = now() WHERE stack_key = $1`,
          [this.stackKey, this.leaseId, epoch, me.runId, this.timing.ttlMs],
        );
        await this.upsert(client, record);
        await client.query(`DELETE FROM ${this.target.waiterTable} WHERE stack_key = $1 AND waiter_id = $2`, [this.stackKey, this.waiterId]);
        placesInQueue.delete(placeKey);
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
    if (taken.stale) await this.endStaleSessions(client, taken.epoch).catch(() => undefined);
    return { acquired: true as const, record: taken.record };
  }

  /** Ends the sessions of runs with an older epoch of this lease (their lease session, engine, fence checks). */
  private async endStaleSessions(client: PgClient, epoch: number): Promise<void> {
    const prefixes = [ENGINE_SESSION_PREFIX, LEASE_SESSION_PREFIX, FENCE_SESSION_PREFIX].map((p) => `${p}${this.leaseId}:`);
    const result = await client.query<{ pid: number; name: string }>(
      "SELECT pid, application_name AS name FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (left(application_name, $4) = $1 OR left(application_name, $5) = $2 OR left(application_name, $6) = $3)",
      [...prefixes, ...prefixes.map((p) => p.length)],
    );
    const stale = result.rows.filter((row) => {
      const older = /:([0-9]{1,15})$/.exec(row.name);
      return older !== null && Number(older[1]) < epoch;
    });
    for (const row of stale) await client.query("SELECT pg_terminate_backend($1)", [row.pid]).catch(() => undefined);
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
    return this.once((client) => this.pulumiLocksOn(client));
  }

  private async pulumiLocksOn(client: PgClient): Promise<PulumiLock[]> {
    const where = stackPath(this.stack, this.project);
    // Keys are <prefix>.pulumi/locks/<org>/<project>/<stack>/<id>.json; matched here, not by LIKE ("_" is a LIKE wildcard).
    const locksDir = `${this.target.keyPrefix}.pulumi/locks/`;
    const result = await client.query<{ key: string; data: { data?: unknown } }>(
      `SELECT key, data FROM ${this.target.pulumiTable} WHERE left(key, char_length($1)) = $1`,
      [locksDir],
    );
    const locks: PulumiLock[] = [];
    for (const row of result.rows) {
      const parts = row.key.slice(this.target.keyPrefix.length).split("/");
      if (parts.length !== 6 || parts[3] !== where.project || parts[4] !== where.stack || (where.org !== undefined && parts[2] !== where.org)) continue;
      if (!parts[5]!.endsWith(".json")) continue;
      let content: { pid?: unknown; hostname?: unknown; timestamp?: unknown } = {};
      try {
        content = JSON.parse(Buffer.from(String(row.data?.data ?? ""), "base64").toString("utf8"));
      } catch {
        // unreadable: a holder we know nothing of (never provably gone)
      }
      locks.push({
        key: row.key,
        pid: typeof content.pid === "number" ? content.pid : -1,
        hostname: typeof content.hostname === "string" ? content.hostname : "",
        ...(typeof content.timestamp === "string" ? { timestamp: content.timestamp } : {}),
      });
    }
    return locks;
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
