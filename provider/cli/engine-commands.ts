// The commands that run the Pulumi engine (everything but validate). Loaded
// only when needed: @pulumi/pulumi takes a second or two to load, and
// `user-groups validate` must stay offline and fast.
import { appendFileSync } from "node:fs";
import path from "node:path";
import { backendNotice, detectDrift, FileRefusedError, EngineEdgeError, FleetStackError, isFleetStack, type GroupSpec, GroupsValidationError, formatDuration, StackLockedError, StackLockTimeoutError, destroyUserGroups, previewUserGroups, provisionUserGroups, refreshUserGroups, type RunOptions, type RunResult, RunFailedError, UntrustedStateError, workspaceOf, recoverStack, assertDeletionsAllowed, DeletionRefusedError, writeFileReplacing, UntrustedWorkspaceError, UntrustedProviderCodeError, BaseUrlNotAllowedError, readRegularFile, resourceNameOf, secretValuesOf } from "../automation/internal";
import { scrubText } from "../client/redact";
import { ENV_HINTS } from "../logic/credentials";
import { UserGroupsError } from "../wire/errors";
import { type CliArgs, EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./args";
import { driftSummaryMarkdown, formatDriftTable, formatTable, progressPrinter, runSummaryMarkdown, terminalMessage, terminalText, withCreateDetails } from "./output";
import { type CliIo, printJson, reportFailure, tell } from "./io";
import { describeTakeover, explainLock } from "./lock-message";
import { assertAppliedAsReviewed, assertPreviewAsReviewed, checkedReviewedPlan, MAX_PLAN_BYTES, PlanMismatchError, plannedChangesOf, type PlanOrigin, planFileText, type ReviewedPlan, reviewedPlanOf, reviewSummaryMarkdown } from "./reviewed-plan";

function jsonDocument(result: RunResult, showSecrets: boolean, changeDigest?: string): Record<string, unknown> {
  return {
    operation: result.operation,
    stack: result.stack,
    backendUrl: result.backendUrl,
    changed: result.changed,
    summary: result.summary,
    ...(changeDigest !== undefined ? { changeDigest } : {}),
    groups: result.groups.map(({ token, ...rest }) => (showSecrets && token !== undefined ? { ...rest, token } : rest)),
  };
}

/** --summary-file (replaced, never written through a symlink a checkout may hold there), else GITHUB_STEP_SUMMARY (appended) when set. */
function writeSummary(args: CliArgs, io: CliIo, markdown: string): void {
  if (args.summaryFile !== undefined) writeFileReplacing(args.summaryFile, markdown);
  else if (io.env.GITHUB_STEP_SUMMARY) appendFileSync(io.env.GITHUB_STEP_SUMMARY, `${markdown}\n`);
}

/** The reviewed plan of `up --plan-file`: a bounded regular file, this command's format, this stack's, of the commit and run given. */
function readReviewedPlan(file: string, stack: string, expected: PlanOrigin | undefined): ReviewedPlan {
  let text: string;
  try {
    text = readRegularFile(file, MAX_PLAN_BYTES, "plan file").toString("utf8");
  } catch (error) {
    // No plan there: the preview that writes it has not run (or its file was not kept for this job).
    if (error instanceof FileRefusedError && error.problem === "missing") {
      throw new PlanMismatchError(
        "plan_file_invalid",
        `The plan file ${JSON.stringify(file.slice(0, 300))} does not exist: \`up --plan-file\` applies the changes a \`preview --plan-file\` wrote there. ` +
          `Run \`user-groups preview --file <groups file> --stack ${stack} --plan-file ${file.slice(0, 300)}\` first (on the pull request), and keep that file for the up. Nothing was changed.`,
      );
    }
    throw new PlanMismatchError("plan_file_invalid", `${error instanceof Error ? error.message : String(error)}: nothing was changed.`);
  }
  return checkedReviewedPlan(text, file, stack, expected);
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
      tell(io, `stack "${args.stack}" is locked by another run; waiting up to ${formatDuration(args.lockTimeoutMs ?? 0)}.${text ? `\n  ${text}` : ""}`);
    } else if (waitedMs > 0 && Math.floor((waitedMs + waitMs) / 60_000) > Math.floor(waitedMs / 60_000)) {
      tell(io, `still waiting for the lock of stack "${args.stack}" (${formatDuration(waitedMs + waitMs)})`);
    }
  };
}

/** Runs an engine command of parsed, validated arguments; returns the exit code. */
export async function runEngineCommand(args: CliArgs, groups: readonly GroupSpec[] | undefined, io: CliIo): Promise<number> {
  const changing = args.operation === "up" || args.operation === "destroy" || args.operation === "recover";
  if (changing && !args.yes && !io.isTty) {
    const message = `refusing to ${args.operation} without --yes: not on a terminal, so nobody can confirm.`;
    return reportFailure(io, { code: "confirmation_required", message, exitCode: EXIT_USAGE }, args.json);
  }
  const workDir = path.join(args.file !== undefined ? path.dirname(path.resolve(args.file)) : process.cwd(), ".user-groups");
  const base: { -readonly [K in keyof RunOptions]: RunOptions[K] } = {
    stack: args.stack,
    workDir,
    ...(args.backendUrl !== undefined ? { backendUrl: args.backendUrl } : {}),
    ...(args.parallel !== undefined ? { parallel: args.parallel } : {}),
    ...(args.lockTimeoutMs !== undefined ? { lockTimeoutMs: args.lockTimeoutMs } : {}),
    ...(args.refresh ? { refresh: true } : {}),
    // The provider's advice (a missing key) is worded for the command line: environment variables.
    envVars: { [ENV_HINTS]: "cli" },
  };
  // Stacks kept elsewhere than where `pulumi` would look (PULUMI_BACKEND_URL, else `pulumi login`'s backend): said once, on stderr.
  const notice = args.json ? undefined : backendNotice(args.backendUrl || process.env.PULUMI_BACKEND_URL || `file://${path.join(workDir, "state")}`, process.env, "cli");
  if (notice !== undefined) tell(io, notice);
  const guard = { allowDeleteAll: args.allowDeleteAll, ...(args.maxDeletes !== undefined ? { maxDeletes: args.maxDeletes } : {}) };
  // Where the lock lives, for messages about it: only asked when a lock is met.
  const backendUrl = () => workspaceOf(base).backendUrl;
  base.onLockWait = lockWaitReporter(args, io, backendUrl);
  base.onTakeover = (report) => {
    for (const line of describeTakeover(report, args.stack)) tell(io, line);
  };
  const withGroups = { ...base, ...guard, groups: groups ?? [] };
  const progress: Array<{ finish(): void }> = [];
  // A fresh progress display for each run (the confirmation preview is a run of its own).
  // `preview`: the run applies nothing, and its rows say so ("create planned (preview)", not "create done").
  const options = <T extends RunOptions>(run: T, preview = false): T => {
    if (args.json) return run;
    const printer = progressPrinter(io.stderr, io.progressIsTty, {
      ...(groups !== undefined ? { total: groups.length } : {}),
      ...(io.columns !== undefined ? { columns: io.columns } : {}),
      ...(preview ? { preview } : {}),
    });
    progress.push(printer);
    return { ...run, onEvent: printer };
  };
  const endProgress = () => {
    for (const printer of progress.splice(0)) printer.finish();
  };

  try {
    // An object store's bucket missing, its credentials refused, its conditions ignored: one coded line before Pulumi is
    // asked, in every run's stack selection (automation/engine/open-stack.ts), as for the fleet and the library.
    if (args.operation === "drift") {
      const report = await detectDrift({ ...base, ...(groups !== undefined ? { groups } : {}) });
      if (args.json) printJson(io, report);
      else io.stdout(`${formatDriftTable(report)}\n`);
      writeSummary(args, io, driftSummaryMarkdown(report));
      return report.inSync ? EXIT_OK : EXIT_CHANGES;
    }
    // up --plan-file: the reviewed plan (this stack's, of the commit and run given) is read before the engine runs at all.
    const reviewed = args.operation === "up" && args.planFile !== undefined ? readReviewedPlan(args.planFile, args.stack, args.planOrigin) : undefined;
    // The whole set of a groups file on a fleet's stack would delete what the fleet made.
    if ((args.operation === "up" || args.operation === "destroy") && !args.force && (await isFleetStack(base))) {
      throw new FleetStackError(args.stack, args.operation);
    }
    if (changing && !args.yes) {
      const preview = args.operation === "up" ? withCreateDetails(await previewUserGroups(options(withGroups, true)), groups) : undefined;
      endProgress();
      // Refused before asking: the up itself would refuse it after the yes.
      if (preview) assertDeletionsAllowed({ operation: "preview", stack: args.stack, ...plannedDeletionsOf(preview) }, guard);
      if (preview) io.stdout(`${formatTable(preview)}\n`);
      const question =
        args.operation === "up"
          ? "Apply these changes"
          : args.operation === "recover"
            ? `Recover stack "${args.stack}" (remove a dead run's lock, refresh, up adopting its pending creates)`
            : `Delete every group of stack "${args.stack}"`;
      if (!(await io.confirm(`${terminalMessage(question)}? [y/N] `))) {
        tell(io, "nothing was changed.");
        return EXIT_OK;
      }
    }
    // up --plan-file: a preview now must find exactly the reviewed changes before anything is applied.
    if (reviewed !== undefined) {
      const now = await previewUserGroups(options(withGroups, true));
      endProgress();
      assertPreviewAsReviewed(reviewed, now, groups ?? [], resourceNameOf);
    }
    // A new group's row shows what it declares (from the groups file): what a reviewer approves.
    const result = withCreateDetails(await runOperation(args, io, options(withGroups, args.operation === "preview")), groups);
    endProgress();
    const plan =
      args.operation === "preview" || args.operation === "up"
        ? reviewedPlanOf(args.stack, plannedChangesOf(result, groups ?? [], resourceNameOf), args.operation === "preview" ? args.planOrigin : undefined)
        : undefined;
    if (args.json) printJson(io, jsonDocument(result, args.showSecrets, plan?.digest));
    else io.stdout(`${formatTable(result)}${plan !== undefined && result.changed ? `\nchange set ${plan.digest}` : ""}\n`);
    if (plan !== undefined) writeSummary(args, io, reviewSummaryMarkdown(result, plan));
    if (args.operation === "preview" && args.planFile !== undefined && plan !== undefined) writeFileReplacing(args.planFile, planFileText(plan));
    // What was applied is checked too: a change that slipped in between the check and the up is named, loudly.
    if (reviewed !== undefined && plan !== undefined) assertAppliedAsReviewed(reviewed, plan);
    if (args.expectNoChanges && result.changed) {
      tell(io, `${args.operation} found changes in stack "${args.stack}" (--expect-no-changes).`);
      return EXIT_CHANGES;
    }
    return EXIT_OK;
  } catch (error) {
    endProgress();
    // The library scrubs its errors; this is the last word before a terminal or a CI log, so once more.
    const secrets = secretValuesOf({ ...(args.backendUrl !== undefined ? { backendUrl: args.backendUrl } : {}) }, io.env);
    const message = scrubText(`${args.operation} of stack "${args.stack}" failed: ${describeFailure(error, args, backendUrl)}`, secrets);
    const refusedInput =
      [GroupsValidationError, FleetStackError, DeletionRefusedError, UntrustedWorkspaceError, UntrustedProviderCodeError, UntrustedStateError, BaseUrlNotAllowedError, PlanMismatchError].some((refusal) => error instanceof refusal) &&
      !(error instanceof PlanMismatchError && error.applied);
    const exitCode = refusedInput ? EXIT_USAGE : EXIT_FAILED;
    return reportFailure(io, { code: error instanceof UserGroupsError ? error.code : "internal_error", message, exitCode }, args.json);
  }
}

/** A preview's deletions, and the groups the stack holds (all it shows but creates). */
function plannedDeletionsOf(preview: RunResult): { held: number; deleting: string[] } {
  return {
    held: preview.groups.filter((g) => g.change !== "create").length,
    deleting: preview.groups.filter((g) => g.change === "delete").map((g) => g.resourceName),
  };
}

async function runOperation(args: CliArgs, io: CliIo, options: RunOptions & { groups: readonly GroupSpec[] }): Promise<RunResult> {
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
      const report = await recoverStack({ ...options, rewriteProviders: args.rewriteProviders, ...(args.breakLease ? { breakLease: true } : {}) });
      for (const lock of report.removedLocks) tell(io, `removed the stale lock ${terminalText(lock)}`);
      for (const file of report.repairedFiles) tell(io, `removed ${terminalText(file)} (torn by the interrupted write)`);
      if (report.pending.length > 0) tell(io, `cleared ${report.pending.length} pending operations`);
      if (report.adopted.length > 0) tell(io, `adopted the groups whose create was pending: ${report.adopted.map(terminalText).join(", ")}`);
      for (const name of report.undeclaredPendingCreates) {
        tell(io, `warning: ${terminalText(name)} was being created but is no longer in the groups file; it may exist on the server`);
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
  // At the engine's edge (no Pulumi CLI, a wrong passphrase, no backend): the advice for a command line.
  if (error instanceof EngineEdgeError) return error.messageFor("cli");
  // Ours say what happened in their message (Pulumi's are translated into ours by the automation layer).
  return error instanceof Error ? error.message : String(error);
}
