// The tables of a PostgreSQL backend's run lease (lease-store.ts): the lease
// row per stack with its epoch, the run record beside it, the queue of waiters;
// what they are called in session names; ending a stale holder's sessions;
// Pulumi's lock rows of a stack.
import type { PulumiLock } from "../backend";
import { createHash } from "node:crypto";
import { UserGroupsError } from "../../wire/errors";
import type { LeaseTiming } from "../run-record";
import { stackPath } from "../run-record";
import { ensureRunFence } from "./fence-trigger";
import { FENCE_SESSION_PREFIX } from "./run-fence";
import type { SqlClient } from "./session";
import { createTablesIfMissing, type OwnTableSpec } from "./tables";
import type { postgresTarget } from "./target";

type PostgresTarget = ReturnType<typeof postgresTarget>;

/** The lease's id in session names: 16 hex digits of the table, project and stack. */
export function leaseIdOf(pulumiTable: string, project: string, stack: string): string {
  return createHash("sha256").update(`user-groups run lease\u0000${pulumiTable}\u0000${project}\u0000${stack}`).digest("hex").slice(0, 16);
}

/**
 * A PostgreSQL lease lives 10 s past its last renewal; its holder renews every
 * 2 s. Another replica takes it within ~10-15 s of the last renewal and then
 * needs ~10 s (takeover and its own run, measured on a loaded 2-core machine)
 * to serve: within 30 s. Its providers stop sending 3 s before it expires
 * (run-fence.ts FENCE_MARGIN_MS), so up to 3 renewals may fail in a row
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

/** How soon a waiter refused only for an earlier waiter tries again (the earlier one takes the lease at its next try). */
export const QUEUED_RETRY_MS = 500;

/** Session names (application_name): a run's engine, a run's lease session. */
export const ENGINE_SESSION_PREFIX = "ug-run:";
export const LEASE_SESSION_PREFIX = "ug-lease:";

export type PgClient = SqlClient;

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

/** Our tables of the lease, as verifyOwnTables checks them. */
export function leaseOwnTables(target: PostgresTarget): OwnTableSpec[] {
  return [
    { table: target.recordTable, columns: { stack_key: "text", record: "jsonb", updated_at: "timestamp with time zone" } },
    {
      table: target.leaseTable,
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
      table: target.waiterTable,
      columns: { stack_key: "text", waiter_id: "text", since: "timestamp with time zone", seen_at: "timestamp with time zone" },
    },
  ];
}

/** Our tables of the lease (and Pulumi's, so that the fence is on it before its first write), and the fence. */
export async function ensureLeaseTables(client: PgClient, target: PostgresTarget): Promise<void> {
  await createTablesIfMissing(client, [
    `CREATE TABLE IF NOT EXISTS ${target.recordTable} (stack_key TEXT PRIMARY KEY, record JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    `CREATE TABLE IF NOT EXISTS ${target.leaseTable} (stack_key TEXT PRIMARY KEY, lease_id TEXT NOT NULL, epoch BIGINT NOT NULL, ` +
      `run_id TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, released BOOLEAN NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    `CREATE TABLE IF NOT EXISTS ${target.waiterTable} (stack_key TEXT NOT NULL, waiter_id TEXT NOT NULL, since TIMESTAMPTZ NOT NULL, ` +
      `seen_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (stack_key, waiter_id))`,
    // Pulumi's own table, exactly as Pulumi creates it (its CREATE ... IF NOT EXISTS is then a no-op), so that the fence is on it before its first write.
    `CREATE TABLE IF NOT EXISTS ${target.pulumiTable} (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())`,
  ]);
  await ensureRunFence(client, target);
}

/** Ends the sessions of runs with an older epoch of this lease (their lease session, engine, fence checks). */
export async function endStaleSessions(client: PgClient, leaseId: string, epoch: number): Promise<void> {
  const prefixes = [ENGINE_SESSION_PREFIX, LEASE_SESSION_PREFIX, FENCE_SESSION_PREFIX].map((p) => `${p}${leaseId}:`);
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

/** Pulumi's lock rows of a stack: keys <prefix>.pulumi/locks/<org>/<project>/<stack>/<id>.json, the holder in the data. */
export async function pulumiLockRows(client: PgClient, target: PostgresTarget, project: string, stack: string): Promise<PulumiLock[]> {
  const where = stackPath(stack, project);
  // Matched here, not by LIKE ("_" is a LIKE wildcard).
  const locksDir = `${target.keyPrefix}.pulumi/locks/`;
  const result = await client.query<{ key: string; data: { data?: unknown } }>(`SELECT key, data FROM ${target.pulumiTable} WHERE left(key, char_length($1)) = $1`, [locksDir]);
  const locks: PulumiLock[] = [];
  for (const row of result.rows) {
    const parts = row.key.slice(target.keyPrefix.length).split("/");
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
