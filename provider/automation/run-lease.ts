// The stack's run lease (docs/architecture.md, "Names and locks"): every run of
// ours holds it for as long as it may hold Pulumi's own stack lock, so a run
// that holds the lease and still finds a Pulumi lock knows that lock is a dead
// run's, or someone else's, and can tell which.
//
// - postgres:// backends: a session-level advisory lock on a connection of its
//   own; it dies with the holder's connection, so a killed holder frees it at
//   once (a vanished host: within the server's TCP keepalive, set to ~25 s here).
// - file:// backends: a lease file in the backend (0700 directory, 0600 file)
//   holding the holder's host, pid, run id and an expiry it renews; on the same
//   host a dead pid ends it at once, elsewhere the expiry does.
// - other backends: no lease (acquireRunLease answers undefined).
//
// Beside the lease lives the run record (the lease file itself; a row of our
// own table on PostgreSQL): who holds it, since when, the dead runs whose
// leftovers are not yet dealt with (`unfinished`), and the groups whose create
// a dead run left pending (`adopt`), so that an interrupted takeover is
// finished by the next holder. The record is never kept in the work directory,
// which a repository (and so a pull request) may hold.
import { createHash, randomUUID } from "node:crypto";
import { chmodSync, closeSync, existsSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { z } from "zod";
import { createTablesIfMissing, processAlive } from "../client/shared-state";
import { UserGroupsError } from "../wire/errors";
import { StackLockedError } from "./lock-wait";
import { fileBackendDir, pulumiProcessAlive, readLockHolders } from "./stale-lock";
import { assertValidStackName } from "./stack-name";

/** How often a holder renews its record; a file lease lives LEASE_TTL_MS past the last renewal. */
export const RENEW_EVERY_MS = 5_000;
export const LEASE_TTL_MS = 20_000;

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
 * dead pid is dead at once; otherwise the expiry decides (a reused pid only
 * delays the end until then).
 */
export function leaseStateOf(record: RunRecord | undefined, now: number, here: Here): LeaseState {
  if (record === undefined || record.released) return "free";
  if (record.host === here.host && !here.pidAlive(record.pid)) return "dead";
  return record.expiresAt <= now ? "dead" : "live";
}

/** A holder of Pulumi's own stack lock, as the lock says. */
export interface PulumiLock {
  /** The lock's file (file backend) or key (PostgreSQL). */
  readonly key: string;
  readonly pid: number;
  readonly hostname: string;
  readonly timestamp?: string;
}

export type HolderVerdict =
  /** Its process runs (same host): wait for it. */
  | { readonly verdict: "live" }
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
  const { runId, host, pid, startedAt, renewedAt } = previous ?? me;
  // The newest hundred are plenty: each ends with the takeover that deals with it.
  const unfinished = [...(previous?.unfinished ?? []), ...(died ? [{ runId, host, pid, startedAt, renewedAt }] : [])].slice(-100);
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
  constructor(readonly holder: RunRecord | undefined) {
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
  tryAcquire(me: RunClaim): Promise<{ readonly acquired: true; readonly record: RunRecord } | { readonly acquired: false; readonly holder?: RunRecord }>;
  /** Rewrites the held lease's record (renewal, adopt list); false when the lease is no longer ours. */
  write(record: RunRecord): Promise<boolean>;
  release(record: RunRecord): Promise<void>;
  pulumiLocks(): Promise<PulumiLock[]>;
  removePulumiLock(lock: PulumiLock): Promise<void>;
  close(): Promise<void>;
  /** Told when the lease is lost behind our back (PostgreSQL: the connection ended). */
  onLost?: (() => void) | undefined;
}

/** org, project and stack of a stack name as the diy backend files it (a bare name: any org, our project). */
export function stackPath(stack: string, project: string): { org?: string; project: string; stack: string } {
  const parts = assertValidStackName(stack).split("/");
  if (parts.length === 3) return { org: parts[0]!, project: parts[1]!, stack: parts[2]! };
  if (parts.length === 2) return { org: parts[0]!, project, stack: parts[1]! };
  return { project, stack: parts[0]! };
}

// ---------------------------------------------------------------- file backend

/** Writes a file (mode 0600) through a temporary name; `exclusive` publishes it only if `file` does not exist yet. */
export function writePrivate(file: string, text: string, exclusive: boolean): boolean {
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (!exclusive) {
      renameSync(temporary, file);
      return true;
    }
    linkSync(temporary, file); // fails if the name exists: one winner
    return true;
  } catch (error) {
    if (exclusive && (error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

export function privateDirs(root: string, dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Every level we made or own, from the backend down: 0700 (mkdir's mode is masked by the umask).
  for (let at = dir; at.startsWith(root) && at !== path.dirname(root); at = path.dirname(at)) {
    const stats = lstatSync(at);
    const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
    if (at !== root && mine && stats.isDirectory() && (stats.mode & 0o077) !== 0) chmodSync(at, 0o700);
    if (at === root) break;
  }
}

const LEASE_FILE = /^lease-(\d{1,15})\.json$/;

/**
 * A file backend's lease: `<backend>/.user-groups/leases/<project>/<stack>/lease-<n>.json`.
 * Each new holder publishes generation n+1 with an exclusive link, so of two
 * runs taking a free (or dead) lease at once exactly one wins; the holder
 * alone rewrites its own generation.
 */
export class FileLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  private readonly dir: string;
  private held: number | undefined;

  constructor(
    private readonly backendDir: string,
    private readonly project: string,
    private readonly stack: string,
    private readonly here: Here = HERE,
    private readonly now: () => number = Date.now,
  ) {
    this.dir = path.join(backendDir, ".user-groups", "leases", project, encodeURIComponent(assertValidStackName(stack)));
  }

  private generations(): number[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .map((name) => LEASE_FILE.exec(name)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  private fileOf(generation: number): string {
    return path.join(this.dir, `lease-${generation}.json`);
  }

  private read(generation: number): RunRecord | undefined | "missing" {
    try {
      return parseRunRecord(readFileSync(this.fileOf(generation), "utf8"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
      throw error;
    }
  }

  async tryAcquire(me: RunClaim) {
    privateDirs(this.backendDir, this.dir);
    const generations = this.generations();
    const current = generations.at(-1) ?? 0;
    const previous = current > 0 ? this.read(current) : undefined;
    if (previous === "missing") return { acquired: false as const }; // pruned under us: look again
    // A record that does not parse (torn by a crash, or not ours) holds nothing.
    if (leaseStateOf(previous, this.now(), this.here) === "live") return { acquired: false as const, ...(previous ? { holder: previous } : {}) };
    const record = successorRecord(previous, me);
    if (!writePrivate(this.fileOf(current + 1), `${JSON.stringify(record)}\n`, true)) return { acquired: false as const };
    this.held = current + 1;
    for (const old of generations) rmSync(this.fileOf(old), { force: true });
    return { acquired: true as const, record };
  }

  async write(record: RunRecord): Promise<boolean> {
    if (this.held === undefined) return false;
    // Ours only while no later generation exists and ours is still there with our run id.
    const latest = this.generations().at(-1);
    const mine = this.read(this.held);
    if (latest !== this.held || mine === "missing" || mine?.runId !== record.runId) {
      this.held = undefined;
      this.onLost?.();
      return false;
    }
    writePrivate(this.fileOf(this.held), `${JSON.stringify(record)}\n`, false);
    return true;
  }

  async release(record: RunRecord): Promise<void> {
    await this.write({ ...record, released: true });
    this.held = undefined;
  }

  async pulumiLocks(): Promise<PulumiLock[]> {
    const where = stackPath(this.stack, this.project);
    return readLockHolders(this.backendDir, where.project, where.stack)
      .filter((holder) => where.org === undefined || path.basename(path.dirname(path.dirname(path.dirname(holder.file)))) === where.org)
      .map((holder) => ({ key: holder.file, pid: holder.pid, hostname: holder.hostname, ...(holder.timestamp !== undefined ? { timestamp: holder.timestamp } : {}) }));
  }

  async removePulumiLock(lock: PulumiLock): Promise<void> {
    rmSync(lock.key, { force: true });
    rmSync(`${lock.key}.attrs`, { force: true });
  }

  async close(): Promise<void> {}
}

// ---------------------------------------------------------------- PostgreSQL backend

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

export class BackendTableNameError extends UserGroupsError {
  constructor(readonly table: string) {
    super("backend_table_name", `The backend URL's table ${JSON.stringify(table.slice(0, 80))} is not a plain SQL name (letters, digits, _; optionally schema.table): refusing to use it.`);
    this.name = "BackendTableNameError";
  }
}

/**
 * The connection string (our `table` option off), the tables (Pulumi's, and ours
 * beside it), and the prefix of Pulumi's keys: the diy backend files every key
 * under the URL's path (the database name), `postgres/.pulumi/...`.
 */
export function postgresTarget(backendUrl: string): { connectionString: string; pulumiTable: string; recordTable: string; keyPrefix: string } {
  const url = new URL(backendUrl);
  const pulumiTable = url.searchParams.get("table") || "pulumi_state";
  if (!SQL_NAME.test(pulumiTable)) throw new BackendTableNameError(pulumiTable);
  url.searchParams.delete("table");
  // The SSL modes as Pulumi's driver (lib/pq) reads them, "require" when unset: the same connection as the backend's.
  if (!url.searchParams.has("sslmode")) url.searchParams.set("sslmode", "require");
  if (!url.searchParams.has("uselibpqcompat")) url.searchParams.set("uselibpqcompat", "true");
  const schema = pulumiTable.includes(".") ? `${pulumiTable.split(".")[0]}.` : "";
  const subDir = decodeURIComponent(url.pathname).replace(/^\/+/, "");
  const keyPrefix = subDir === "" ? "" : subDir.endsWith("/") ? subDir : `${subDir}/`;
  return { connectionString: url.toString(), pulumiTable, recordTable: `${schema}user_groups_run_records`, keyPrefix };
}

/** A driver's message with the URL's password (if it ever showed) taken out. */
export function withoutSecret(message: string, connectionString: string): string {
  const password = decodeURIComponent(new URL(connectionString).password);
  return password.length > 0 ? message.split(password).join("****") : message;
}

/** The advisory lock's key: a 64-bit number of the table, project and stack. */
export function advisoryKey(pulumiTable: string, project: string, stack: string): string {
  return createHash("sha256").update(`user-groups run lease\u0000${pulumiTable}\u0000${project}\u0000${stack}`).digest().readBigInt64BE(0).toString();
}

type PgClient = import("pg").Client;

/**
 * A PostgreSQL backend's lease: `pg_try_advisory_lock` on a connection of its
 * own (session level: it ends with the session), the record in our own table
 * `user_groups_run_records` beside Pulumi's. Connects with the backend URL's
 * own credentials; never prints them.
 */
export class PostgresLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  private client: PgClient | undefined;
  private connecting: Promise<PgClient> | undefined;
  private holding = false;
  private readonly target: ReturnType<typeof postgresTarget>;
  private readonly key: string;
  private readonly stackKey: string;

  constructor(
    backendUrl: string,
    private readonly project: string,
    private readonly stack: string,
  ) {
    this.target = postgresTarget(backendUrl);
    this.key = advisoryKey(this.target.pulumiTable, project, assertValidStackName(stack));
    this.stackKey = `${project}/${stack}`;
  }

  private async connection(): Promise<PgClient> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const { Client } = await import("pg");
      const client = new Client({ connectionString: this.target.connectionString, application_name: "pulumi-user-groups run lease", keepAlive: true });
      const dropped = () => {
        if (this.client === client) this.client = undefined;
        if (this.holding) {
          this.holding = false;
          this.onLost?.();
        }
      };
      client.on("error", dropped);
      client.on("end", dropped);
      try {
        await client.connect();
      } catch (error) {
        throw new UserGroupsError("run_lease_unreachable", `Cannot reach the PostgreSQL backend for the run lease: ${withoutSecret((error as Error).message, this.target.connectionString)}`);
      }
      // The server ends the session (and with it the lease) of a holder whose host vanished: ~25 s.
      for (const setting of ["tcp_keepalives_idle = 10", "tcp_keepalives_interval = 5", "tcp_keepalives_count = 3"]) {
        await client.query(`SET ${setting}`).catch(() => undefined);
      }
      await this.ensureTable(client);
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private ensureTable(client: PgClient): Promise<void> {
    return createTablesIfMissing(client, [
      `CREATE TABLE IF NOT EXISTS ${this.target.recordTable} (stack_key TEXT PRIMARY KEY, record JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    ]);
  }

  private async readRecord(client: PgClient): Promise<RunRecord | undefined> {
    const result = await client.query<{ record: unknown }>(`SELECT record FROM ${this.target.recordTable} WHERE stack_key = $1`, [this.stackKey]);
    const row = result.rows[0];
    return row === undefined ? undefined : parseRunRecord(JSON.stringify(row.record));
  }

  async tryAcquire(me: RunClaim) {
    const client = await this.connection();
    const result = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1::bigint) AS ok", [this.key]);
    if (!result.rows[0]?.ok) {
      const holder = await this.readRecord(client);
      return { acquired: false as const, ...(holder ? { holder } : {}) };
    }
    this.holding = true;
    try {
      // The advisory lock is the lease: the last record's holder no longer holds it.
      const record = successorRecord(await this.readRecord(client), me);
      await this.upsert(client, record);
      return { acquired: true as const, record };
    } catch (error) {
      await this.unlock(client);
      throw error;
    }
  }

  private async upsert(client: PgClient, record: RunRecord): Promise<void> {
    await client.query(
      `INSERT INTO ${this.target.recordTable} (stack_key, record) VALUES ($1, $2) ON CONFLICT (stack_key) DO UPDATE SET record = $2, updated_at = now()`,
      [this.stackKey, JSON.stringify(record)],
    );
  }

  private async unlock(client: PgClient): Promise<void> {
    this.holding = false;
    await client.query("SELECT pg_advisory_unlock($1::bigint)", [this.key]).catch(() => undefined);
  }

  async write(record: RunRecord): Promise<boolean> {
    const client = this.client;
    if (!this.holding || client === undefined) return false;
    await this.upsert(client, record);
    return true;
  }

  async release(record: RunRecord): Promise<void> {
    const client = this.client;
    if (!this.holding || client === undefined) return;
    try {
      await this.upsert(client, { ...record, released: true });
    } finally {
      await this.unlock(client);
    }
  }

  async pulumiLocks(): Promise<PulumiLock[]> {
    const client = await this.connection();
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
    const client = await this.connection();
    await client.query(`DELETE FROM ${this.target.pulumiTable} WHERE key = $1`, [lock.key]);
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.holding = false;
    await client?.end().catch(() => undefined);
  }
}

/** The lease store of a backend, or undefined for a backend without one (S3, Azure, GCS, Pulumi Cloud). */
export function leaseStoreFor(backendUrl: string, project: string, stack: string): LeaseStore | undefined {
  const dir = fileBackendDir(backendUrl);
  if (dir !== undefined) return new FileLeaseStore(dir, project, stack);
  if (/^postgres(ql)?:\/\//i.test(backendUrl)) return new PostgresLeaseStore(backendUrl, project, stack);
  return undefined;
}

/** Environment variable every run's engine and providers carry: which run they belong to. */
export const RUN_ID_ENV = "USER_GROUPS_RUN_ID";

/**
 * The lease held by this run: renewed in the background (an unref'd timer);
 * `signal` aborts when it is lost, so that the run stops before another takes over.
 */
export class RunLease {
  private record: RunRecord;
  private readonly timer: NodeJS.Timeout;
  private readonly abort = new AbortController();
  private released = false;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    readonly store: LeaseStore,
    readonly stackName: string,
    record: RunRecord,
    private readonly now: () => number = Date.now,
  ) {
    this.record = record;
    store.onLost = () => this.lose();
    // A renewal that fails (a backend hiccup) is tried again; one not renewed for nearly its lifetime is given up.
    this.timer = setInterval(
      () =>
        void this.update({}).catch(() => {
          if (this.now() - this.record.renewedAt > LEASE_TTL_MS - RENEW_EVERY_MS) this.lose();
        }),
      RENEW_EVERY_MS,
    );
    this.timer.unref();
  }

  get runId(): string {
    return this.record.runId;
  }

  get current(): RunRecord {
    return this.record;
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
  update(change: Partial<Pick<RunRecord, "unfinished" | "adopt">>): Promise<void> {
    const next = this.writing.then(async () => {
      if (this.released || this.lost) return;
      const renewedAt = this.now();
      const record: RunRecord = { ...this.record, ...change, renewedAt, expiresAt: renewedAt + LEASE_TTL_MS };
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
    clearInterval(this.timer);
    await this.writing;
    this.released = true;
    this.store.onLost = undefined;
    // Even when lost: the store lets go of whatever it still holds (an advisory lock whose renewal failed).
    await this.store.release(this.record);
  }
}

export interface AcquireOptions {
  readonly here?: Here;
  readonly now?: () => number;
}

/**
 * Takes the stack's run lease, or throws StackLockedError (naming its holder)
 * while a live run holds it: the lock-wait policy then waits and tries again.
 */
export async function acquireRunLease(store: LeaseStore, stackName: string, options: AcquireOptions = {}): Promise<RunLease> {
  const here = options.here ?? HERE;
  const now = options.now ?? Date.now;
  const startedAt = now();
  const outcome = await store.tryAcquire({ runId: randomUUID(), host: here.host, pid: process.pid, startedAt, renewedAt: startedAt });
  if (!outcome.acquired) throw new StackLockedError(stackName, { cause: new RunLeaseHeldError(outcome.holder) });
  return new RunLease(store, stackName, outcome.record, now);
}
