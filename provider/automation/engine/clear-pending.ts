// Step 6 of a takeover (takeover.ts): the state's pending creates cleared, once
// every one is dealt with. Not an engine run (a `refresh --clear-pending-creates`,
// a deployment of its own with its update history, on the path of every takeover
// before the waiter's own run; measured, it cost about what this import costs:
// ~0.7 s of CPU, since it was targeted at the stack and loaded no plugin).
// Instead the state as the backend
// holds it now (after the adopting up; secrets still ciphertext) is written back
// without its pending creates (`pulumi stack import` of a private file:
// state-document.ts). The lease is confirmed right before the write, and the
// write is fenced as every write of the run is (PostgreSQL: the epoch the run is
// marked with; object stores: the private copy, committed conditionally).
// Interrupted before the write, the pending creates stay: the next holder finds
// them and adopts again (a group already in the state is read, not created).
// On an object store the engine's backend is the run's private copy (a file
// backend no other process writes while the run holds the lease: the engine is
// not running between the takeover's steps): the checkpoint is written there in
// this process, no CLI process (~2 s on a loaded machine, on the path from a dead
// holder's lease to the waiter's answer); it reaches the store with the run's
// next commit, conditional as every commit is.
import type { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { OBJECT_COPY_ENV, writeStoredDeployment } from "../backend";
import type { RunLease } from "../lease";
import { assertStateIsData, exportState, importState } from "./state";
import { PROJECT_NAME } from "./workspace";

interface PendingOperations {
  pending_operations?: Array<{ type?: string }>;
}

/** Writes the stack's state back without its pending creates (other pending operations kept); nothing when it holds none. */
export async function clearPendingCreates(stack: Stack, stackName: string, lease: RunLease): Promise<void> {
  const current = await exportState(stack);
  assertStateIsData(current, stackName);
  const { pending_operations: operations = [], ...rest } = current.deployment as PendingOperations & Record<string, unknown>;
  if (!operations.some((op) => op.type === "creating")) return;
  const kept = operations.filter((op) => op.type !== "creating");
  const deployment = kept.length > 0 ? { ...rest, pending_operations: kept } : rest;
  const env = (stack.workspace as LocalWorkspace).envVars ?? {};
  const backendUrl = env["PULUMI_BACKEND_URL"];
  if (env[OBJECT_COPY_ENV] !== undefined && backendUrl?.startsWith("file://")) {
    await confirmLease(lease);
    if (writeStoredDeployment(backendUrl, PROJECT_NAME, stack.name, { version: 3, deployment })) return;
  }
  await importState(stack, { ...current, deployment }, { beforeWrite: () => confirmLease(lease) });
}

/** Renews the lease (a write of its record under its epoch): throws its loss when another run holds the stack now. */
async function confirmLease(lease: RunLease): Promise<void> {
  await lease.update({});
  if (lease.lost) throw lease.signal.reason;
}
