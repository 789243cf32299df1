// The commands that run the Pulumi engine (everything but validate). Loaded
// only when needed: @pulumi/pulumi takes a second or two to load, and
// `user-groups validate` must stay offline and fast.
import { appendFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { detectDrift } from "../automation/drift";
import { FleetStackError, isFleetStack } from "../automation/fleet";
import { GroupsValidationError } from "../automation/groups-spec";
import { formatDuration, StackLockedError, StackLockTimeoutError } from "../automation/lock-wait";
import {
  destroyUserGroups,
  previewUserGroups,
  provisionUserGroups,
  refreshUserGroups,
  type RunOptions,
  type RunResult,
  RunFailedError,
  workspaceOf,
} from "../automation/provision";
import { recoverStack } from "../automation/recover";
import { UserGroupsError } from "../wire/errors";
import { type CliArgs, EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./args";
import type { CliIo } from "./io";
import { describeTakeover, explainLock } from "./lock-message";
import { progressPrinter } from "./progress";
import { driftSummaryMarkdown, runSummaryMarkdown } from "./summary";
import { formatDriftTable, formatTable } from "./table";

function jsonDocument(result: RunResult, showSecrets: boolean): unknown {
  return {
    operation: result.operation,
    stack: result.stack,
    backendUrl: result.backendUrl,
    changed: result.changed,
    summary: result.summary,
    groups: result.groups.map(({ token, ...rest }) => (showSecrets && token !== undefined ? { ...rest, token } : rest)),
  };
}

/** --summary-file, else GITHUB_STEP_SUMMARY (appended) when set. */
function writeSummary(args: CliArgs, io: CliIo, markdown: string): void {
  if (args.summaryFile !== undefined) writeFileSync(args.summaryFile, markdown, { mode: 0o600 });
  else if (io.env.GITHUB_STEP_SUMMARY) appendFileSync(io.env.GITHUB_STEP_SUMMARY, `${markdown}\n`);
}

/** The command that clears a dead run's lock (a backend URL may hold a password: named, not repeated). */
function recoverCommand(args: CliArgs): string {
  return `user-groups recover --stack ${args.stack} --file ${args.file ?? "<groups file>"}${args.backendUrl !== undefined ? " --backend-url <the same URL>" : ""}`;
}

/** Waiting for a lock: say who holds it, once (a holder found dead meanwhile is taken over by the next attempt). */
function lockWaitReporter(args: CliArgs, io: CliIo, backendUrl: () => string): RunOptions["onLockWait"] {
  let told = false;
  return (waitMs, waitedMs) => {
    if (!told) {
      told = true;
      const { text } = explainLock(backendUrl(), args.stack, recoverCommand(args));
      io.stderr(`user-groups: stack "${args.stack}" is locked by another run; waiting up to ${formatDuration(args.lockTimeoutMs ?? 0)}.${text ? `\n  ${text}` : ""}\n`);
    } else if (waitedMs > 0 && Math.floor((waitedMs + waitMs) / 60_000) > Math.floor(waitedMs / 60_000)) {
      io.stderr(`user-groups: still waiting for the lock of stack "${args.stack}" (${formatDuration(waitedMs + waitMs)})\n`);
    }
  };
}

/** Runs an engine command of parsed, validated arguments; returns the exit code. */
export async function runEngineCommand(args: CliArgs, groups: unknown[] | undefined, io: CliIo): Promise<number> {
  const changing = args.operation === "up" || args.operation === "destroy" || args.operation === "recover";
  if (changing && !args.yes && !io.isTty) {
    io.stderr(`user-groups: refusing to ${args.operation} without --yes: not on a terminal, so nobody can confirm.\n`);
    return EXIT_USAGE;
  }
  const workDir = path.join(args.file !== undefined ? path.dirname(path.resolve(args.file)) : process.cwd(), ".user-groups");
  const base: { -readonly [K in keyof RunOptions]: RunOptions[K] } = {
    stack: args.stack,
    workDir,
    ...(args.backendUrl !== undefined ? { backendUrl: args.backendUrl } : {}),
    ...(args.parallel !== undefined ? { parallel: args.parallel } : {}),
    ...(args.lockTimeoutMs !== undefined ? { lockTimeoutMs: args.lockTimeoutMs } : {}),
    ...(args.refresh ? { refresh: true } : {}),
  };
  // Where the lock lives, for messages about it: only asked when a lock is met.
  const backendUrl = () => workspaceOf(base).backendUrl;
  base.onLockWait = lockWaitReporter(args, io, backendUrl);
  base.onTakeover = (report) => {
    for (const line of describeTakeover(report, args.stack)) io.stderr(`user-groups: ${line}\n`);
  };
  const withGroups = { ...base, groups: groups ?? [] };
  const progress: Array<{ finish(): void }> = [];
  // A fresh progress display for each run (the confirmation preview is a run of its own).
  const options = <T extends RunOptions>(run: T): T => {
    if (args.json) return run;
    const printer = progressPrinter(io.stderr, io.progressIsTty, { ...(groups !== undefined ? { total: groups.length } : {}), ...(io.columns !== undefined ? { columns: io.columns } : {}) });
    progress.push(printer);
    return { ...run, onEvent: printer };
  };
  const endProgress = () => {
    for (const printer of progress.splice(0)) printer.finish();
  };

  try {
    if (args.operation === "drift") {
      const report = await detectDrift({ ...base, ...(groups !== undefined ? { groups } : {}) });
      io.stdout(args.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatDriftTable(report)}\n`);
      writeSummary(args, io, driftSummaryMarkdown(report));
      return report.inSync ? EXIT_OK : EXIT_CHANGES;
    }
    // The whole set of a groups file on a fleet's stack would delete what the fleet made.
    if ((args.operation === "up" || args.operation === "destroy") && !args.force && (await isFleetStack(base))) {
      throw new FleetStackError(args.stack, args.operation);
    }
    if (changing && !args.yes) {
      const preview = args.operation === "up" ? await previewUserGroups(options(withGroups)) : undefined;
      endProgress();
      if (preview) io.stdout(`${formatTable(preview)}\n`);
      const question =
        args.operation === "up"
          ? "Apply these changes"
          : args.operation === "recover"
            ? `Recover stack "${args.stack}" (remove a dead run's lock, refresh, up adopting its pending creates)`
            : `Delete every group of stack "${args.stack}"`;
      if (!(await io.confirm(`${question}? [y/N] `))) {
        io.stderr("user-groups: nothing was changed.\n");
        return EXIT_OK;
      }
    }
    const result = await runOperation(args, io, options(withGroups));
    endProgress();
    io.stdout(args.json ? `${JSON.stringify(jsonDocument(result, args.showSecrets), null, 2)}\n` : `${formatTable(result)}\n`);
    if (args.operation === "preview" || args.operation === "up") writeSummary(args, io, runSummaryMarkdown(result));
    if (args.expectNoChanges && result.changed) {
      io.stderr(`user-groups: ${args.operation} found changes in stack "${args.stack}" (--expect-no-changes).\n`);
      return EXIT_CHANGES;
    }
    return EXIT_OK;
  } catch (error) {
    endProgress();
    io.stderr(`user-groups: ${args.operation} of stack "${args.stack}" failed: ${describeFailure(error, args, backendUrl)}\n`);
    return error instanceof GroupsValidationError || error instanceof FleetStackError ? EXIT_USAGE : EXIT_FAILED;
  }
}

async function runOperation(args: CliArgs, io: CliIo, options: RunOptions & { groups: unknown[] }): Promise<RunResult> {
  switch (args.operation) {
    case "preview":
      return previewUserGroups(options);
    case "up":
      return provisionUserGroups(options);
    case "refresh":
      return refreshUserGroups(options);
    case "destroy":
      return destroyUserGroups(options);
    default: {
      const report = await recoverStack(options);
      for (const lock of report.removedLocks) io.stderr(`user-groups: removed the stale lock ${lock}\n`);
      for (const file of report.repairedFiles) io.stderr(`user-groups: removed ${file} (torn by the interrupted write)\n`);
      if (report.pending.length > 0) io.stderr(`user-groups: cleared ${report.pending.length} pending operations\n`);
      if (report.adopted.length > 0) io.stderr(`user-groups: adopted the groups whose create was pending: ${report.adopted.join(", ")}\n`);
      for (const name of report.undeclaredPendingCreates) {
        io.stderr(`user-groups: warning: ${name} was being created but is no longer in the groups file; it may exist on the server\n`);
      }
      return report.up;
    }
  }
}

function describeFailure(error: unknown, args: CliArgs, backendUrl: () => string): string {
  if (error instanceof StackLockedError || error instanceof StackLockTimeoutError) {
    const { text } = explainLock(backendUrl(), args.stack, recoverCommand(args), error);
    if (text === undefined) return error.message;
    return error instanceof StackLockTimeoutError ? `${text}\n  (waited ${formatDuration(error.waitedMs)}, the lock timeout)` : text;
  }
  // A run: what the engine's diagnostic events said, per group.
  if (error instanceof RunFailedError) return error.diagnostics.join("\n  ");
  // Ours say what happened in their message; only Pulumi's own errors need reading.
  if (error instanceof UserGroupsError) return error.message;
  return describeCommandFailure(error);
}

/**
 * A Pulumi command that failed before the engine said anything (stack selection,
 * config, a wrong passphrase): its CommandError carries only the CLI's text
 * (the result it wraps is private), so keep its "error:" lines.
 */
function describeCommandFailure(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text.split("\n").map((l) => l.trim());
  const errors = lines.filter((l) => /^error:/i.test(l) && !/update failed|preview failed|refresh failed|destroy failed/i.test(l));
  return errors.length > 0 ? errors.map((l) => l.replace(/^error:\s*/i, "")).join("\n  ") : (lines.find((l) => l.length > 0) ?? "unknown error");
}

