// An object-store backend as one BackendAdapter, whatever the store: the lease,
// the shard directory and the rate budget of object-lease.ts and
// object-stores.ts on the store's client, its providers' fence named by the
// environment (OBJECT_FENCE_ENV). Each store's folder (s3/, gs/, azblob/) gives
// its scheme and how to make its client from a URL.
import { type BackendAdapter, RATE_BUDGET_ENV, type RunFence } from "./backend";
import { type ObjectClient, ObjectStoreError, verifyConditions } from "./object-client";
import { OBJECT_COPY_ENV } from "./object-engine-copy";
import { OBJECT_FENCE_ENV, ObjectLeaseStore, ObjectRunFence } from "./object-lease";
import { ObjectShardDirectory, ObjectSlotStore } from "./object-stores";

const LEASE_KEY = /^\.user-groups\/leases\/[^/]{1,300}\/[^/]{1,300}\/lease\.json$/;

/** `client(url, env)`: the store's client; its credentials come from `env` (process.env in a process of ours). */
export function objectStoreAdapter(kind: string, scheme: string, client: (url: string, env: NodeJS.ProcessEnv) => ObjectClient): BackendAdapter {
  const handles = (url: string) => url.toLowerCase().startsWith(`${scheme}://`);
  /** One fence per process and lease. */
  const fences = new Map<string, RunFence>();
  return {
    kind,
    handles,
    open(url) {
      const store = client(url, process.env);
      return {
        kind,
        leaseStore: (project, stack, options) => new ObjectLeaseStore(store, project, stack, options),
        shardDirectory: (project, stack) => new ObjectShardDirectory(store, project, stack),
        // The backend URL itself: the provider processes inherit the credentials from the engine's environment.
        rateBudgetEnv: () => ({ [RATE_BUDGET_ENV.store]: url }),
      };
    },
    // A missing bucket, refused credentials, a store that ignores conditions: coded (probed once per process).
    check: (url) => verifyConditions(client(url, process.env)),
    slotStoreAt(location, _table, rules) {
      try {
        return new ObjectSlotStore(client(location, process.env), rules);
      } catch {
        return undefined;
      }
    },
    runFenceFromEnv(env) {
      const url = env[OBJECT_FENCE_ENV.url]?.trim();
      if (!url || !handles(url)) return undefined;
      const epoch = env[OBJECT_FENCE_ENV.epoch]?.trim() ?? "";
      const key = env[OBJECT_FENCE_ENV.key]?.trim() ?? "";
      if (!/^[0-9]{1,15}$/.test(epoch) || !LEASE_KEY.test(key)) {
        throw new ObjectStoreError("backend_url_invalid", `${OBJECT_FENCE_ENV.epoch} and ${OBJECT_FENCE_ENV.key} must name an epoch and a lease object`);
      }
      const copy = env[OBJECT_COPY_ENV]?.trim() || undefined;
      const id = `${url}\u0000${key}\u0000${epoch}\u0000${copy ?? ""}`;
      let fence = fences.get(id);
      if (fence === undefined) {
        // Credentials as the engine passed them down (in a provider process env is process.env).
        fence = new ObjectRunFence(client(url, { ...process.env, ...env }), key, Number(epoch), undefined, copy);
        fences.set(id, fence);
      }
      return fence;
    },
  };
}
