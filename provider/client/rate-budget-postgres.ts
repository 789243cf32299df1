// The rate budget of a PostgreSQL backend's users (fleet replicas on several
// hosts, shards, concurrent runs): one row per budget in a small table beside
// Pulumi's, booked with one atomic upsert per slot. The slot arithmetic runs on
// the database's clock, so hosts whose clocks disagree still space their
// requests correctly. Connects with the connection string it is given (no
// password in it: PGPASSWORD carries that, as for Pulumi's own driver) and
// never shows a driver's message.
import { errorCode, MAX_AHEAD_MS, MAX_HOLD_MS, type SlotStore } from "./rate-budget";
import { createTablesIfMissing } from "./shared-state";
import { UserGroupsError } from "../wire/errors";

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

export const DEFAULT_BUDGET_TABLE = "user_groups_rate_budget";

type PgClient = import("pg").Client;

export class PostgresSlotStore implements SlotStore {
  private client: PgClient | undefined;
  private connecting: Promise<PgClient> | undefined;
  private readonly table: string;

  constructor(
    private readonly connectionString: string,
    table: string = DEFAULT_BUDGET_TABLE,
  ) {
    if (!SQL_NAME.test(table)) throw new UserGroupsError("backend_table_name", `The rate budget table ${JSON.stringify(table.slice(0, 80))} is not a plain SQL name: refusing to use it.`);
    this.table = table;
  }

  private connection(): Promise<PgClient> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const { Client } = await import("pg");
      // A database that hangs must not hang every request: the budget then paces the process alone (rate-budget.ts).
      const client = new Client({
        connectionString: this.connectionString,
        application_name: "pulumi-user-groups rate budget",
        keepAlive: true,
        connectionTimeoutMillis: 10_000,
        query_timeout: 10_000,
      });
      const dropped = () => {
        if (this.client === client) this.client = undefined;
      };
      client.on("error", dropped);
      client.on("end", dropped);
      try {
        await client.connect();
        await this.ensureTable(client);
      } catch (error) {
        await client.end().catch(() => undefined);
        // The driver's message may quote the connection: only its code travels.
        throw new UserGroupsError("rate_budget_unreachable", `Cannot use the PostgreSQL backend for the rate budget (${errorCode(error)})`);
      }
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private ensureTable(client: PgClient): Promise<void> {
    return createTablesIfMissing(client, [`CREATE TABLE IF NOT EXISTS ${this.table} (budget_id TEXT PRIMARY KEY, next_free TIMESTAMPTZ NOT NULL)`]);
  }

  /**
   * bookSlot (rate-budget.ts) in one statement: the slot begins at the later of
   * now and the row's next free slot (a next free slot beyond MAX_AHEAD_MS is
   * dropped), and the row moves one interval past it. Row locking serialises
   * concurrent bookings; now() is the statement's start, so a booking that waited
   * for the row lock answers a slightly longer wait, never a shorter one.
   */
  async book(budgetId: string, intervalMs: number): Promise<number> {
    const client = await this.connection();
    const result = await client.query<{ wait_ms: number }>(
      `INSERT INTO ${this.table} AS b (budget_id, next_free) VALUES ($1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (budget_id) DO UPDATE SET next_free =
         CASE WHEN b.next_free > now() + $3 * interval '1 millisecond' THEN now() ELSE GREATEST(b.next_free, now()) END
         + $2 * interval '1 millisecond'
       RETURNING (EXTRACT(EPOCH FROM (b.next_free - now())) * 1000 - $2)::float8 AS wait_ms`,
      [budgetId, intervalMs, MAX_AHEAD_MS],
    );
    return Math.max(0, result.rows[0]?.wait_ms ?? 0);
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    const client = await this.connection();
    await client.query(
      `INSERT INTO ${this.table} AS b (budget_id, next_free) VALUES ($1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (budget_id) DO UPDATE SET next_free =
         GREATEST(CASE WHEN b.next_free > now() + $3 * interval '1 millisecond' THEN now() ELSE b.next_free END, EXCLUDED.next_free)`,
      [budgetId, Math.min(Math.max(0, holdMs), MAX_HOLD_MS), MAX_AHEAD_MS],
    );
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
