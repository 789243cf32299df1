// backends/: a shared state backend is one folder behind one interface
// (backend.ts): the run lease with epochs and renewal, the fence, Pulumi's own
// stack lock, the shard directory's storage, the rate budget's slots. This file
// is the registry: `backendFor(url)` chooses the adapter by the URL's scheme.
// Adding a backend: a folder that implements BackendAdapter, one line in
// ADAPTERS, and test/backends/conformance.ts run against it.
import type { BackendAdapter, RunFence, SharedBackend, SlotRules, SlotStore } from "./backend";
import { azblobAdapter } from "./azblob";
import { fileAdapter } from "./file";
import { postgresAdapter } from "./postgres";
import { gsAdapter } from "./gs";
import { s3Adapter } from "./s3";

/** Every kind of backend with shared state of ours, by scheme (others: Pulumi Cloud, ... have none). */
const ADAPTERS: readonly BackendAdapter[] = [fileAdapter, postgresAdapter, s3Adapter, gsAdapter, azblobAdapter];

/** The adapter of a backend URL's kind, or undefined for a backend without shared state of ours. */
export function adapterFor(url: string): BackendAdapter | undefined {
  return ADAPTERS.find((adapter) => adapter.handles(url));
}

/** The backend a URL names, or undefined for one without shared state of ours (no lease, no directory, no shared budget). */
export function backendFor(url: string): SharedBackend | undefined {
  return adapterFor(url)?.open(url);
}

/**
 * Before Pulumi is asked about a stack at this URL (every run's stack selection,
 * open-stack.ts): the backend is there, takes the credentials and honours the
 * conditions our leases need, or one coded refusal (object stores:
 * backend_bucket_missing, backend_credentials_rejected,
 * backend_conditions_ignored). A backend that passed is not asked again in this
 * process; other kinds have nothing to check.
 */
export async function checkBackend(url: string): Promise<void> {
  await adapterFor(url)?.check?.(url);
}

/** In a provider process: the slot store a budget location names (RATE_BUDGET_ENV.store); undefined when no adapter reads it. */
export function slotStoreAt(location: string, table: string | undefined, rules: SlotRules): SlotStore | undefined {
  return adapterFor(location)?.slotStoreAt(location, table, rules);
}

/**
 * In a provider process: the fence of its run, or undefined when the
 * environment names none (a backend that does not fence, a provider run
 * outside our automation). A malformed fence is refused by its adapter.
 */
export function runFenceFromEnv(env: NodeJS.ProcessEnv): RunFence | undefined {
  for (const adapter of ADAPTERS) {
    const fence = adapter.runFenceFromEnv?.(env);
    if (fence !== undefined) return fence;
  }
  return undefined;
}

/** Where a run's provider processes share their key's rate budget: the stack's own backend ({} for one without). */
export function rateBudgetEnv(backendUrl: string): Record<string, string> {
  return backendFor(backendUrl)?.rateBudgetEnv() ?? {};
}

export * from "./backend";
export { backendUrlSecrets, engineBackendEnv, withApplicationName, withoutCredentials } from "./backend-url";
export * from "./file";
export * from "./postgres";
export * from "./run-record";
export { ObjectStoreError, type ObjectClient } from "./object-client";
export { OBJECT_FENCE_ENV, OBJECT_LEASE_TIMING, OBJECT_WAITER_STALE_MS } from "./object-lease";
export { isEngineCopyUrl, OBJECT_COPY_ENV } from "./object-engine-copy";
export * from "./s3";
export * from "./gs";
export * from "./azblob";
export { assertValidStackName, InvalidStackNameError, isValidStackName } from "./stack-name";
export { PROCESS_WAITER, type QueuePlace, type Waiter } from "./waiter";
