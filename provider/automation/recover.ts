// Recovery of a stack whose `pulumi up` was killed (kill -9, a lost CI runner):
// a stale lock, operations the state lists as pending, and groups the service
// created whose answer never reached the state. Proven by test/reliability/crash.test.ts
// and bench/crash.ts.
//
// Which server groups get adopted: exactly those whose create the state lists
// as pending. The engine persists a pending "creating" operation before it asks
// the provider to create, so every group a killed run may have created is on
// that list; a group with a declared id that is neither in the state nor on the
// list is someone else's, and the recovery's `up` refuses it ("already exists")
// as any `up` would. The provider itself cannot tell the two apart.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type GroupSpec, validateGroups } from "./groups-spec";
import { nameOfUrn, resourceNameOf } from "./resource-name";
import { openStack, type ProvisionOptions, provisionUserGroups, type RunResult, runError, workspaceOf } from "./provision";
import { fileBackendDir, removeStaleLocks } from "./stale-lock";
import { repairTornWrites } from "./torn-sidecars";
import { PROJECT_NAME } from "./workspace";

export interface PendingOperation {
  /** "creating", "updating", "deleting", "reading", "importing". */
  readonly type: string;
  readonly resourceName: string;
}

export interface RecoveryReport {
  /** Lock files of dead runs that were removed. */
  readonly removedLocks: readonly string[];
  /** Torn metadata sidecars and temporary files of the dead run's last checkpoint write that were removed. */
  readonly repairedFiles: readonly string[];
  /** What the state listed as pending before the recovery (cleared by it). */
  readonly pending: readonly PendingOperation[];
  /** Groups the recovery's `up` adopted (pending creates, including ones an interrupted recovery saw). */
  readonly adopted: readonly string[];
  /** Pending creates of groups no longer declared: left on the server, named here so that someone looks. */
  readonly undeclaredPendingCreates: readonly string[];
  /** The final `up`. */
  readonly up: RunResult;
}

const USER_GROUP_TYPE_SUFFIX = ":UserGroup";

interface RawPendingOperation {
  type?: string;
  resource?: { urn?: string; type?: string };
}

function pendingOf(deployment: unknown): PendingOperation[] {
  const operations = (deployment as { pending_operations?: RawPendingOperation[] } | undefined)?.pending_operations ?? [];
  return operations
    .filter((op) => op.resource?.type?.endsWith(USER_GROUP_TYPE_SUFFIX) === true && typeof op.resource.urn === "string")
    .map((op) => ({ type: op.type ?? "unknown", resourceName: nameOfUrn(op.resource!.urn!) }));
}

/**
 * The groups to adopt survive an interrupted recovery: the refresh clears the
 * pending list, so it is written down first and removed only after the `up`.
 */
function recoveryFile(workDir: string, stack: string): string {
  return path.join(workDir, `.recovery-${stack.replace(/[^A-Za-z0-9._-]/g, "_")}.json`);
}

function readAdoptList(file: string): string[] {
  if (!existsSync(file)) return [];
  const parsed = JSON.parse(readFileSync(file, "utf8")) as { adopt?: unknown };
  return Array.isArray(parsed.adopt) ? parsed.adopt.filter((x): x is string => typeof x === "string") : [];
}

/**
 * Brings a stack back after an interrupted run: removes a dead run's lock
 * (and the torn files of a checkpoint write it was killed in), refreshes with
 * the pending creates cleared (each recorded group is read back, so a rotation
 * that happened but was never recorded lands its token in the state), then runs `up` of `groups` with adoptExisting on exactly the groups
 * whose create was pending. `groups` must be what the interrupted run declared
 * (or the new desired list); run this only once the killed run's requests can
 * no longer arrive at the service.
 */
export async function recoverStack(options: ProvisionOptions): Promise<RecoveryReport> {
  const specs = validateGroups(options.groups);
  // Before any Pulumi command: a dead run's lock and torn sidecar would make each of them fail.
  const workspace = workspaceOf(options);
  const removedLocks = removeStaleLocks(workspace.backendUrl, PROJECT_NAME, options.stack);
  const backendDir = fileBackendDir(workspace.backendUrl);
  const repairedFiles = backendDir !== undefined && removedLocks.length > 0 ? repairTornWrites(backendDir, PROJECT_NAME, options.stack) : [];
  const file = recoveryFile(workspace.workDir, options.stack);
  const prepared = await openStack(options, []);
  let pending: PendingOperation[];
  let adopt: string[];
  try {
    pending = pendingOf((await prepared.stack.exportStack()).deployment);
    const creates = pending.filter((op) => op.type === "creating").map((op) => op.resourceName);
    adopt = [...new Set([...readAdoptList(file), ...creates])].sort();
    if (adopt.length > 0) writeFileSync(file, `${JSON.stringify({ adopt }, null, 2)}\n`, { mode: 0o600 });
    await prepared.stack.refresh({
      clearPendingCreates: true,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
    });
  } catch (error) {
    throw runError(error, options);
  } finally {
    prepared.release();
  }
  const toAdopt = new Set(adopt);
  const groups: GroupSpec[] = specs.map((spec) => (toAdopt.has(resourceNameOf(spec)) ? { ...spec, adoptExisting: true } : spec));
  const up = await provisionUserGroups({ ...options, groups });
  rmSync(file, { force: true });
  const declared = new Set(specs.map(resourceNameOf));
  return {
    removedLocks,
    repairedFiles,
    pending,
    adopted: adopt.filter((name) => declared.has(name)),
    undeclaredPendingCreates: adopt.filter((name) => !declared.has(name)),
    up,
  };
}
