// The file ("diy") backend's stack lock, left behind by a killed `pulumi up`.
// Pulumi writes one JSON file per lock holder at
// <backend>/.pulumi/locks/<org>/<project>/<stack>/<uuid>.json (plus a `.attrs`
// sibling), holding {"pid","username","hostname","timestamp"} of the CLI that
// took it. `pulumi cancel` does not exist for this backend, so a lock whose
// process is gone has to be removed by hand; this does it only when that
// process is provably dead: same host, and no live pulumi process has its PID.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { assertValidStackName } from "../stack-name";
import { UserGroupsError } from "../../wire/errors";
import { fileBackendDir } from "./backend-dir";

export interface LockHolder {
  readonly file: string;
  readonly pid: number;
  readonly hostname: string;
  readonly timestamp?: string;
}

export class LiveLockError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly holder: LockHolder,
    why: string,
  ) {
    super(
      "stack_lock_live",
      `Stack "${stackName}" is locked by pid ${holder.pid} on host "${holder.hostname}" (since ${holder.timestamp ?? "unknown"}): ${why}. ` +
        `Nothing was changed. If that run is really gone, delete ${holder.file} and try again.`,
    );
    this.name = "LiveLockError";
  }
}

function lockDirs(backendDir: string, project: string, stack: string): string[] {
  assertValidStackName(stack); // joined into paths below
  const root = path.join(backendDir, ".pulumi", "locks");
  if (!existsSync(root)) return [];
  // The org segment is "organization" for project-scoped diy stacks; look under each to be safe.
  return readdirSync(root)
    .map((org) => path.join(root, org, project, stack))
    .filter((dir) => existsSync(dir));
}

export function readLockHolders(backendDir: string, project: string, stack: string): LockHolder[] {
  const holders: LockHolder[] = [];
  for (const dir of lockDirs(backendDir, project, stack)) {
    for (const name of readdirSync(dir)) {
      if (!name.endsWith(".json")) continue;
      const file = path.join(dir, name);
      const parsed = JSON.parse(readFileSync(file, "utf8")) as { pid?: unknown; hostname?: unknown; timestamp?: unknown };
      holders.push({
        file,
        pid: typeof parsed.pid === "number" ? parsed.pid : -1,
        hostname: typeof parsed.hostname === "string" ? parsed.hostname : "",
        ...(typeof parsed.timestamp === "string" ? { timestamp: parsed.timestamp } : {}),
      });
    }
  }
  return holders;
}

/** Is a pulumi process with this PID running here? A reused PID (another program) does not count. */
export function pulumiProcessAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else; count it as alive (cannot tell).
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    // The program itself, not any argument: `node /x/pulumi-user-groups/...` is no pulumi.
    const program = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\u0000")[0] ?? "";
    return /(^|\/)pulumi(\.exe)?$/.test(program);
  } catch {
    return true; // no /proc (not Linux): alive is the safe answer
  }
}

export interface LockHolderStatus extends LockHolder {
  /** Whether its process runs; undefined when it ran on another host (cannot be checked from here). */
  readonly alive: boolean | undefined;
}

/** Who holds the stack's lock on a file backend, and whether each holder's process still runs. */
export function lockHolderStatus(backendUrl: string, project: string, stack: string): LockHolderStatus[] {
  const backendDir = fileBackendDir(backendUrl);
  if (backendDir === undefined) return [];
  return readLockHolders(backendDir, project, stack).map((holder) => ({
    ...holder,
    alive: holder.hostname === hostname() ? pulumiProcessAlive(holder.pid) : undefined,
  }));
}

/**
 * Removes the stack's locks whose process is dead; returns the removed files.
 * Throws LiveLockError when a lock is held by a live process, or by another
 * host (whose processes cannot be checked from here). A non-file backend has
 * no lock files: nothing to do.
 */
export function removeStaleLocks(backendUrl: string, project: string, stack: string): string[] {
  const removed: string[] = [];
  for (const holder of lockHolderStatus(backendUrl, project, stack)) {
    if (holder.alive === undefined) throw new LiveLockError(stack, holder, "it was taken on another host, whose processes cannot be checked from here");
    if (holder.alive) throw new LiveLockError(stack, holder, "that process is still running");
    rmSync(holder.file, { force: true });
    rmSync(`${holder.file}.attrs`, { force: true });
    removed.push(holder.file);
  }
  return removed;
}
