// What to tell someone whose run met a locked stack: which run holds it, since
// when, whether its process is alive (same host), and what clears a dead one.
// Pulumi's own "try again when it has finished" never comes true for a run
// that was killed: its lock stays until removed, which the next changing run
// does by itself (takeover.ts) once the holder is provably gone.
import { RunLeaseHeldError, type RunRecord, lockHolderStatus, type LockHolderStatus, type TakeoverReport, PROJECT_NAME } from "../automation/internal";
import { terminalText } from "./output";

/** A holder as a lock file describes it: outside text (anything can write a lock file into a backend), each field escaped. */
function holderText(holder: LockHolderStatus): string {
  return `pid ${holder.pid} on host "${terminalText(holder.hostname)}" (since ${terminalText(holder.timestamp ?? "an unknown time")})`;
}

/** Every holder's process is known to be gone: its lock will never be released by waiting. */
function allHoldersDead(holders: readonly LockHolderStatus[]): boolean {
  return holders.length > 0 && holders.every((h) => h.alive === false);
}

/** The holders of the stack's lock, described; undefined when nothing can be said (not a file backend, no lock file). */
export function describeLockHolders(holders: readonly LockHolderStatus[], stack: string, recoverCommand: string): string | undefined {
  if (holders.length === 0) return undefined;
  const dead = holders.filter((h) => h.alive === false);
  const live = holders.filter((h) => h.alive === true);
  const elsewhere = holders.filter((h) => h.alive === undefined);
  const lines: string[] = [];
  if (allHoldersDead(holders)) {
    lines.push(
      `Stack "${stack}" is locked by a run that is gone: ${dead.map(holderText).join(", ")} is no longer running, so its lock will never be released. Nothing was changed.`,
      `The next \`up\`, \`refresh\` or \`destroy\` takes it over by itself; \`${recoverCommand}\` does too (and finishes what the run left).`,
    );
    return lines.join("\n  ");
  }
  lines.push(`Stack "${stack}" is locked: another run on it is in progress. Nothing was changed.`);
  for (const holder of live) lines.push(`${holderText(holder)} holds the lock and is still running: try again when it has finished, or wait for it with --lock-timeout.`);
  for (const holder of elsewhere) {
    lines.push(`${holderText(holder)} holds the lock; that host's processes cannot be checked from here. If that run is gone, run \`${recoverCommand}\` there, or delete ${terminalText(holder.file)}.`);
  }
  for (const holder of dead) lines.push(`${holderText(holder)} also holds it but is no longer running; \`${recoverCommand}\` clears it.`);
  return lines.join("\n  ");
}

/** The run holding the stack's run lease, when that is what refused a run (any backend with a lease). */
function leaseHolderOf(error: unknown): RunRecord | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    if (at instanceof RunLeaseHeldError) return at.holder;
  }
  return undefined;
}

/**
 * Reads the lock of a stack on a file backend and describes its holders; when
 * no live process holds Pulumi's lock (or its file is mid-write), the run
 * holding the run lease (`refusal`: the error that refused this run).
 */
export function explainLock(backendUrl: string, stack: string, recoverCommand: string, refusal?: unknown): { text?: string; allDead: boolean } {
  let holders: LockHolderStatus[] | undefined;
  try {
    holders = lockHolderStatus(backendUrl, PROJECT_NAME, stack);
  } catch {
    holders = undefined; // a lock file being written or removed right now: it says nothing
  }
  // Refused by our run lease: its holder was alive then. Pulumi's lock may be between its
  // engine's runs (none, or a file that vanished as it was read): the lease holder is the live holder.
  const leaseHolder = leaseHolderOf(refusal);
  if (leaseHolder !== undefined && (holders ?? []).every((h) => h.alive === false)) {
    holders = [{ file: "", pid: leaseHolder.pid, hostname: leaseHolder.host, timestamp: new Date(leaseHolder.startedAt).toISOString(), alive: true }];
  }
  if (holders === undefined) return { allDead: false };
  const text = describeLockHolders(holders, stack, recoverCommand);
  return { ...(text !== undefined ? { text } : {}), allDead: allHoldersDead(holders) };
}

/** What a run took over from a dead one (CONTRACT F7), one line each, for stderr. */
export function describeTakeover(report: TakeoverReport, stack: string): string[] {
  const lines = report.removedLocks.map(
    (lock) => `took over stack "${stack}" from a run that is gone: removed the lock of pid ${lock.pid} on host "${lock.hostname}" (since ${lock.timestamp ?? "an unknown time"})`,
  );
  if (report.removedLocks.length === 0) lines.push(`finished what a dead run left on stack "${stack}"`);
  if (report.killedProcesses > 0) lines.push(`stopped ${report.killedProcesses} processes the dead run left running`);
  for (const file of report.repairedFiles) lines.push(`removed ${file} (torn by the interrupted write)`);
  if (report.pending.length > 0) lines.push(`cleared ${report.pending.length} pending operations`);
  if (report.adopted.length > 0) lines.push(`adopted the groups whose create was pending: ${report.adopted.join(", ")}`);
  if (report.notAdopted.length > 0) lines.push(`could not adopt yet (the next run tries again): ${report.notAdopted.join(", ")}`);
  return lines;
}
