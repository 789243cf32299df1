// backend/: a Pulumi backend as files and locks. Its URL and credentials, where a
// file backend keeps things, Pulumi's own stack locks (waiting for one, telling a
// dead holder's), torn checkpoint sidecars, files read and written safely, and
// where a run's providers share the rate budget.
export { backendUrlSecrets, engineBackendEnv, withApplicationName, withoutCredentials } from "./backend-url";
export { fileBackendDir } from "./file-backend";
export { type BackendAudience, backendNotice, loggedInBackend, pulumiHome } from "./login-backend";
export { isStackLocked, type LockWaitOptions, StackLockedError, StackLockTimeoutError, withStackLockWait } from "./lock-wait";
export { LiveLockError, type LockHolder, lockHolderStatus, type LockHolderStatus, pulumiProcessAlive, readLockHolders, removeStaleLocks } from "./pulumi-locks";
export { rateBudgetEnv } from "./rate-budget-env";
export { FileRefusedError, pathTaken, readRegularFile, readRegularFileIfPresent, type RegularFileProblem, writeFileReplacing } from "./regular-file";
export { removeLingeringTornSidecars, repairTornWrites } from "./torn-sidecars";
