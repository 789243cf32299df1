// backend/: a Pulumi backend as the engine sees it: which one `pulumi login`
// chose, waiting for a stack's lock, files read and written safely. What a
// backend stores of ours and of Pulumi's locks is its adapter's
// (provider/backends/), re-exported here for the folders above.
export {
  backendUrlSecrets,
  checkBackend,
  engineBackendEnv,
  fileBackendDir,
  LiveLockError,
  type LockHolder,
  lockHolderStatus,
  OBJECT_COPY_ENV,
  type LockHolderStatus,
  pulumiProcessAlive,
  rateBudgetEnv,
  readLockHolders,
  readStoredDeployment,
  removeLingeringTornSidecars,
  removeStaleLocks,
  repairTornWrites,
  stackFilePresence,
  withApplicationName,
  withoutCredentials,
  writeStoredDeployment,
} from "../../backends";
export { type BackendAudience, backendNotice, loggedInBackend, pulumiHome } from "./login-backend";
export { isStackLocked, type LockWaitOptions, StackLockedError, StackLockTimeoutError, withStackLockWait } from "./lock-wait";
export { FileRefusedError, pathTaken, readRegularFile, readRegularFileIfPresent, type RegularFileProblem, writeFileReplacing } from "./regular-file";
