// shared-state/: what every store of shared state uses (the run lease, the shard
// directory, the rate budget): one PostgreSQL session with its timeouts and
// password handling, the backend URL as a PostgreSQL target, racing table
// creation, a lock file and private files in a file backend, a pid's liveness.
export { LOCK_HERE, type LockHere, withFileLock } from "./file-lock";
export { DEFAULT_CONNECT_TIMEOUT_MS, isConnectionLost, PostgresSession, type PostgresSessionOptions, type SqlClient } from "./postgres-session";
export { BackendTableNameError, isSqlName, postgresTarget, withoutSecret } from "./postgres-target";
export { privateDirs, writePrivate } from "./private-files";
export { processAlive } from "./processes";
export { BackendTableUntrustedError, createTablesIfMissing, type OwnTableSpec, verifyOwnTables } from "./tables";
