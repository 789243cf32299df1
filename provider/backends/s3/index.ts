// s3/: the shared state of an `s3://` backend, in objects beside Pulumi's under
// the same bucket and prefix (`.user-groups/...`): the run lease with epochs
// expiring on the store's clock and its queue of waiters, the shard directory,
// the rate budget (../object-lease.ts, ../object-stores.ts), all kept with S3's
// conditional writes over a SigV4 client of our own (client.ts, sigv4.ts);
// Pulumi's lock objects of a stack. The provider processes are fenced by the
// lease's epoch; the engine's checkpoint writes are not (docs/object-stores.md).
import { type BackendAdapter, RATE_BUDGET_ENV, type RunFence, type SharedBackend } from "../backend";
import { ObjectStoreError } from "../object-client";
import { OBJECT_FENCE_ENV, ObjectLeaseStore, ObjectRunFence } from "../object-lease";
import { ObjectShardDirectory, ObjectSlotStore } from "../object-stores";
import { S3Client } from "./client";

export { S3Client, s3Credentials, s3Target } from "./client";
export { signRequest } from "./sigv4";

const S3_URL = /^s3:\/\//i;

function openS3Backend(url: string): SharedBackend {
  const client = new S3Client(url);
  return {
    kind: "s3",
    leaseStore: (project, stack, options) => new ObjectLeaseStore(client, project, stack, options),
    shardDirectory: (project, stack) => new ObjectShardDirectory(client, project, stack),
    // The backend URL itself: the provider processes inherit the credentials from the engine's environment.
    rateBudgetEnv: () => ({ [RATE_BUDGET_ENV.store]: url }),
  };
}

/** One fence per process and lease. */
const fences = new Map<string, RunFence>();

export const s3Adapter: BackendAdapter = {
  kind: "s3",
  handles: (url) => S3_URL.test(url),
  open: openS3Backend,
  slotStoreAt(location, _table, rules) {
    try {
      return new ObjectSlotStore(new S3Client(location), rules);
    } catch {
      return undefined;
    }
  },
  runFenceFromEnv(env) {
    const url = env[OBJECT_FENCE_ENV.url]?.trim();
    if (!url || !S3_URL.test(url)) return undefined;
    const epoch = env[OBJECT_FENCE_ENV.epoch]?.trim() ?? "";
    const key = env[OBJECT_FENCE_ENV.key]?.trim() ?? "";
    if (!/^[0-9]{1,15}$/.test(epoch) || !/^\.user-groups\/leases\/[^/]{1,300}\/[^/]{1,300}\/lease\.json$/.test(key)) {
      throw new ObjectStoreError("backend_url_invalid", `${OBJECT_FENCE_ENV.epoch} and ${OBJECT_FENCE_ENV.key} must name an epoch and a lease object`);
    }
    const id = `${url}\u0000${key}\u0000${epoch}`;
    let fence = fences.get(id);
    if (fence === undefined) {
      // Credentials as the engine passed them down (a provider process: env is process.env).
      fence = new ObjectRunFence(new S3Client(url, { ...process.env, ...env }), key, Number(epoch));
      fences.set(id, fence);
    }
    return fence;
  },
};
