// The run fence of a PostgreSQL backend: the check every HTTP request of a run's provider process makes
// before it is sent (issue #32 item 1): is the run's lease still the current one?
// The run lease (lease-store.ts) carries an epoch that grows
// with every holder; the provider processes of a run get theirs in their
// environment. Once a newer epoch exists, or the run's lease is about to expire
// (FENCE_MARGIN_MS), the request is not sent and fails with `run_fenced`
// (retryable: the new holder serves the retried call).
//
// The check is a statement of its own on one session per process, made right
// before each attempt goes out (after the rate budget's slot has begun, so a
// slot's wait cannot outlast it), whether or not the rate budget is on.
// Only PostgreSQL backends fence; elsewhere the environment names no fence.
import { type Clock, systemClock } from "../../clock";
import { UserGroupsError } from "../../wire/errors";
import { type RunFence, RunFencedError } from "../backend";
import { PostgresSession } from "./session";
import { isSqlName } from "./target";

export const RUN_FENCE_ENV = {
  /** `<lease id>:<epoch>` of the run (16 hex digits, a number). */
  lease: "USER_GROUPS_RUN_FENCE",
  /** The backend's connection string, without a password (PGPASSWORD carries it, as for Pulumi's driver). */
  db: "USER_GROUPS_RUN_FENCE_DB",
  /** The lease table. */
  table: "USER_GROUPS_RUN_FENCE_TABLE",
} as const;

/**
 * A request goes out only while its run's lease has at least this long to live
 * (the database's clock): a process stalled between its check and its send for
 * less than this still sends within its lease, before any other run can hold it.
 */
export const FENCE_MARGIN_MS = 3_000;

/** How `pg_stat_activity` names a provider process's fence session: `ug-fence:<lease id>:<epoch>`. */
export const FENCE_SESSION_PREFIX = "ug-fence:";


const LEASE = /^([0-9a-f]{16}):([0-9]{1,15})$/;

export class PostgresRunFence implements RunFence {
  private readonly session: PostgresSession;

  constructor(
    connectionString: string,
    private readonly table: string,
    private readonly leaseId: string,
    private readonly epoch: number,
    private readonly clock: Clock = systemClock,
  ) {
    if (!isSqlName(table)) throw new UserGroupsError("backend_table_name", `The run fence table ${JSON.stringify(table.slice(0, 80))} is not a plain SQL name: refusing to use it.`);
    this.session = new PostgresSession({
      connectionString,
      applicationName: `${FENCE_SESSION_PREFIX}${leaseId}:${epoch}`,
      keepAlive: true,
      connectTimeoutMs: 5_000,
      queryTimeoutMs: 5_000,
      // Only the driver's code travels: its message may quote the connection.
      unreachable: (error) => new RunFencedError(`the run's lease could not be confirmed (the backend is unreachable: ${codeOf(error)})`),
    });
  }

  async check(): Promise<void> {
    // A backend hiccup is tried again briefly; a lease that cannot be confirmed is not assumed.
    let last: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const client = await this.session.connection();
        const result = await client.query<{ ok: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE lease_id = $1 AND epoch = $2 AND NOT released
             AND expires_at > now() + $3 * interval '1 millisecond') AS ok`,
          [this.leaseId, this.epoch, FENCE_MARGIN_MS],
        );
        if (result.rows[0]?.ok === true) return;
        throw new RunFencedError(`the run's lease (epoch ${this.epoch}) is no longer current, or expires within ${FENCE_MARGIN_MS / 1000} s`);
      } catch (error) {
        if (error instanceof RunFencedError && !/could not be confirmed/.test(error.message)) throw error;
        last = error;
        await this.session.close();
        if (attempt < 3) await this.clock.sleep(300 * attempt);
      }
    }
    throw last instanceof RunFencedError ? last : new RunFencedError(`the run's lease could not be confirmed (${codeOf(last)})`);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && /^[A-Za-z0-9_]{1,40}$/.test(code) ? code : "error";
}

/** One fence per process and lease. */
const fences = new Map<string, PostgresRunFence>();

/**
 * The fence of this process's run, or undefined when the environment names
 * none (a backend that does not fence, a provider run outside our automation).
 * A malformed fence is refused: a typo must not turn fencing off silently.
 */
export function runFenceFromEnv(env: NodeJS.ProcessEnv): RunFence | undefined {
  const lease = env[RUN_FENCE_ENV.lease]?.trim();
  if (!lease) return undefined;
  const match = LEASE.exec(lease);
  const db = env[RUN_FENCE_ENV.db]?.trim() ?? "";
  const table = env[RUN_FENCE_ENV.table]?.trim() ?? "";
  if (!match || !/^postgres(ql)?:\/\//i.test(db) || !isSqlName(table)) {
    throw new UserGroupsError("invalid_run_fence", `${RUN_FENCE_ENV.lease}, ${RUN_FENCE_ENV.db} and ${RUN_FENCE_ENV.table} must name a lease, a postgres:// URL and a table`);
  }
  const key = `${lease}\u0000${db}\u0000${table}`;
  let fence = fences.get(key);
  if (fence === undefined) {
    fence = new PostgresRunFence(db, table, match[1]!, Number(match[2]));
    fences.set(key, fence);
  }
  return fence;
}
