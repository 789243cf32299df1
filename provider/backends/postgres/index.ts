// postgres/: the shared state of a `postgres://` backend, in tables of ours
// beside Pulumi's (each checked as ours before use): the run lease with epochs
// expiring on the database's clock and its queue of waiters, the fence (a
// trigger on Pulumi's table refusing a stale engine's writes, and the provider
// processes' epoch check), the shard directory, the rate budget; Pulumi's lock
// rows of a stack.
import { type BackendAdapter, RATE_BUDGET_ENV, type SharedBackend } from "../backend";
import { engineBackendEnv } from "../backend-url";
import { PostgresShardDirectory } from "./directory-store";
import { PostgresLeaseStore } from "./lease-store";
import { runFenceFromEnv } from "./run-fence";
import { DEFAULT_BUDGET_TABLE, PostgresSlotStore } from "./slot-store";
import { postgresTarget } from "./target";

export { PostgresShardDirectory } from "./directory-store";
export { LeaseFenceError } from "./fence-trigger";
export { PostgresLeaseStore } from "./lease-store";
export { ENGINE_SESSION_PREFIX, LEASE_SESSION_PREFIX, leaseIdOf, LeaseUnreachableError, PG_LEASE_TIMING, PG_WAITER_STALE_MS } from "./lease-tables";
export { FENCE_MARGIN_MS, FENCE_SESSION_PREFIX, PostgresRunFence, RUN_FENCE_ENV } from "./run-fence";
export { DEFAULT_CONNECT_TIMEOUT_MS, errorCode, isConnectionLost, PostgresSession, type PostgresSessionOptions, type SqlClient } from "./session";
export { DEFAULT_BUDGET_TABLE, PostgresSlotStore } from "./slot-store";
export { BackendTableUntrustedError, createTablesIfMissing, type OwnTableSpec, verifyOwnTables } from "./tables";
export { BackendTableNameError, isSqlName, postgresTarget, withoutSecret } from "./target";

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** A PostgreSQL backend as one SharedBackend (its URL may hold a password: it never leaves the process but in PGPASSWORD). */
function openPostgresBackend(backendUrl: string): SharedBackend {
  return {
    kind: "postgres",
    leaseStore: (project, stack, options) => new PostgresLeaseStore(backendUrl, project, stack, options),
    shardDirectory: (project, stack, options) => new PostgresShardDirectory(backendUrl, project, stack, options),
    // A table beside Pulumi's (its schema), reached with the backend's connection; the password is not in this URL
    // (engineBackendEnv moves it to PGPASSWORD, which the provider process inherits from the engine).
    rateBudgetEnv() {
      const target = postgresTarget(engineBackendEnv(backendUrl).PULUMI_BACKEND_URL);
      const schema = target.pulumiTable.includes(".") ? `${target.pulumiTable.split(".")[0]}.` : "";
      return { [RATE_BUDGET_ENV.store]: target.connectionString, [RATE_BUDGET_ENV.table]: `${schema}${DEFAULT_BUDGET_TABLE}` };
    },
  };
}

export const postgresAdapter: BackendAdapter = {
  kind: "postgres",
  handles: (url) => POSTGRES_URL.test(url),
  open: openPostgresBackend,
  slotStoreAt: (location, table, rules) => new PostgresSlotStore(location, table || undefined, rules),
  runFenceFromEnv,
};
