// The rate budget of a PostgreSQL backend's users (fleet replicas on several
// hosts, shards, concurrent runs): one row per budget in a small table beside
// Pulumi's, booked with one atomic upsert per slot. The slot arithmetic runs on
// the database's clock, so hosts whose clocks disagree still space their
// requests correctly. Connects with the connection string it is given (no
// password in it: PGPASSWORD carries that, as for Pulumi's own driver) and
// never shows a driver's message.
import type { SlotRules, SlotStore } from "../backend";
import { errorCode, PostgresSession, type SqlClient } from "./session";
import { createTablesIfMissing } from "./tables";
import { isSqlName } from "./target";
import { UserGroupsError } from "../../wire/errors";

export const DEFAULT_BUDGET_TABLE = "user_groups_rate_budget";

type PgClient = SqlClient;

function unreachable(error: unknown, _detail?: string, during?: "connect" | "query"): UserGroupsError {
  return new UserGroupsError("rate_budget_unreachable", `Cannot use the PostgreSQL backend for the rate budget (${during === "query" ? "its connection was cut: " : ""}${errorCode(error)})`);
}

export class PostgresSlotStore implements SlotStore {
  private readonly session: PostgresSession;
  private readonly table: string;

  constructor(
    connectionString: string,
    table: string = DEFAULT_BUDGET_TABLE,
    /** The slot arithmetic's bounds (client/rate-budget/budget.ts); the arithmetic itself is bookSlot's, in SQL. */
    private readonly rules: Pick<SlotRules, "maxAheadMs" | "maxHoldMs">,
  ) {
    if (!isSqlName(table)) throw new UserGroupsError("backend_table_name", `The rate budget table ${JSON.stringify(table.slice(0, 80))} is not a plain SQL name: refusing to use it.`);
    this.table = table;
    // A database that hangs must not hang every request: the budget then paces the process alone (budget.ts).
    this.session = new PostgresSession({
      connectionString,
      applicationName: "pulumi-user-groups rate budget",
      keepAlive: true,
      connectTimeoutMs: 10_000,
      queryTimeoutMs: 10_000,
      setup: (client) => this.ensureTable(client).catch((error: unknown) => Promise.reject(unreachable(error))),
      ownTables: [{ table, columns: { budget_id: "text", next_free: "timestamp with time zone" } }],
      // The driver's message may quote the connection: only its code travels.
      unreachable,
    });
  }

  private connection(): Promise<PgClient> {
    return this.session.connection();
  }

  private ensureTable(client: PgClient): Promise<void> {
    return createTablesIfMissing(client, [`CREATE TABLE IF NOT EXISTS ${this.table} (budget_id TEXT PRIMARY KEY, next_free TIMESTAMPTZ NOT NULL)`]);
  }

  /**
   * bookSlot (client/rate-budget/budget.ts) in one statement: the slot begins at the later of
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
      [budgetId, intervalMs, this.rules.maxAheadMs],
    );
    return Math.max(0, result.rows[0]?.wait_ms ?? 0);
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    const client = await this.connection();
    await client.query(
      `INSERT INTO ${this.table} AS b (budget_id, next_free) VALUES ($1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (budget_id) DO UPDATE SET next_free =
         GREATEST(CASE WHEN b.next_free > now() + $3 * interval '1 millisecond' THEN now() ELSE b.next_free END, EXCLUDED.next_free)`,
      [budgetId, Math.min(Math.max(0, holdMs), this.rules.maxHoldMs), this.rules.maxAheadMs],
    );
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
