// The run lease of a PostgreSQL backend: a session-level advisory lock on a
// connection of its own, the record in our table beside Pulumi's.
import type { PulumiLock } from "../model";
import { createHash } from "node:crypto";
import { createTablesIfMissing, PostgresSession, postgresTarget } from "../../client/shared-state";
import { UserGroupsError } from "../../wire/errors";
import { assertValidStackName } from "../model";
import { RunClaim, RunRecord, parseRunRecord, successorRecord, LeaseStore, stackPath } from "./record";

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
  private holding = false;
  private readonly session: PostgresSession;
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
    this.session = new PostgresSession({
      connectionString: this.target.connectionString,
      applicationName: "pulumi-user-groups run lease",
      keepAlive: true,
      setup: async (client) => {
        // The server ends the session (and with it the lease) of a holder whose host vanished: ~25 s.
        for (const setting of ["tcp_keepalives_idle = 10", "tcp_keepalives_interval = 5", "tcp_keepalives_count = 3"]) {
          await client.query(`SET ${setting}`).catch(() => undefined);
        }
        await this.ensureTable(client);
      },
      ownTables: [{ table: this.target.recordTable, columns: { stack_key: "text", record: "jsonb", updated_at: "timestamp with time zone" } }],
      unreachable: (_error, detail) => new UserGroupsError("run_lease_unreachable", `Cannot reach the PostgreSQL backend for the run lease: ${detail}`),
      onDropped: () => {
        if (this.holding) {
          this.holding = false;
          this.onLost?.();
        }
      },
    });
  }

  private connection(): Promise<PgClient> {
    return this.session.connection();
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
    const client = this.session.current;
    if (!this.holding || client === undefined) return false;
    await this.upsert(client, record);
    return true;
  }

  async release(record: RunRecord): Promise<void> {
    const client = this.session.current;
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
    this.holding = false;
    await this.session.close();
  }
}
