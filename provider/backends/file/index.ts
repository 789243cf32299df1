// file/: the shared state of a `file://` backend, in files beside Pulumi's own
// (`<backend>/.user-groups/`, 0700 directories, 0600 files): the run lease
// (generation files, waiters' files), the shard directory, the rate budget's
// ledgers; Pulumi's lock files of a stack; torn checkpoint sidecars. Nothing
// fences a file backend's writers (no fenceEnv).
import path from "node:path";
import { type BackendAdapter, RATE_BUDGET_ENV, type SharedBackend } from "../backend";
import { fileBackendDir } from "./backend-dir";
import { FileShardDirectory } from "./directory-store";
import { FileLeaseStore } from "./lease-store";
import { FileSlotStore } from "./slot-store";

export { fileBackendDir } from "./backend-dir";
export { LOCK_HERE, type LockHere, withFileLock } from "./file-lock";
export { FileShardDirectory } from "./directory-store";
export { FILE_WAITER_STALE_MS, FileLeaseStore } from "./lease-store";
export { privateDirs, writePrivate } from "./private-files";
export { processAlive } from "./processes";
export { LiveLockError, type LockHolder, lockHolderStatus, type LockHolderStatus, pulumiProcessAlive, readLockHolders, removeStaleLocks } from "./pulumi-locks";
export { FileSlotStore, LOCK_STALE_MS, RateBudgetDirError } from "./slot-store";
export { readStoredDeployment, stackFilePresence, writeStoredDeployment, type StackFilePresence, type StoredDeployment, TornCheckpointError } from "./stack-file";
export { removeLingeringTornSidecars, repairTornWrites, TORN_FOR_MS } from "./torn-sidecars";

/** A file backend's directory as one SharedBackend. */
function openFileBackend(dir: string): SharedBackend {
  return {
    kind: "file",
    leaseStore: (project, stack, options) => new FileLeaseStore(dir, project, stack, options),
    shardDirectory: (project, stack) => new FileShardDirectory(dir, project, stack),
    rateBudgetEnv: () => ({ [RATE_BUDGET_ENV.store]: `file://${encodeURI(path.join(path.resolve(dir), ".user-groups", "rate-budget"))}` }),
  };
}

export const fileAdapter: BackendAdapter = {
  kind: "file",
  handles: (url) => url.startsWith("file://"),
  open: (url) => openFileBackend(fileBackendDir(url)!),
  /** `file:///abs/dir` of a ledger directory (what rateBudgetEnv wrote); undefined for anything else. */
  slotStoreAt(location, _table, rules) {
    let dir: string;
    try {
      dir = decodeURIComponent(location.slice("file://".length));
    } catch {
      return undefined;
    }
    if (!path.isAbsolute(dir) || dir.includes("\u0000")) return undefined;
    return new FileSlotStore(path.normalize(dir), { rules });
  },
};
