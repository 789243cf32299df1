#!/usr/bin/env node
// `user-groups`: the GitOps entry point. A groups file in a repository is
// previewed on a pull request, applied on merge, and checked for drift on a
// schedule. Exit codes: 0 done, 1 the run failed, 2 bad usage or groups file,
// 3 --expect-no-changes and there are changes.
import "../compile-cache"; // first: it covers the modules loaded after it
import { readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import yaml from "js-yaml";
import {
  destroyUserGroups,
  type GroupEvent,
  GroupsValidationError,
  type Operation,
  previewUserGroups,
  provisionUserGroups,
  refreshUserGroups,
  type RunOptions,
  type RunResult,
  recoverStack,
  StackLockedError,
} from "../automation/index";
import { LiveLockError } from "../automation/stale-lock";
import { UntrustedWorkspaceError } from "../automation/workspace";
import { groupsDocumentSchema, validateGroups } from "../automation/groups-spec";
import { isValidStackName } from "../automation/stack-name";

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_CHANGES = 3;

const USAGE = `Usage: user-groups <preview|up|refresh|destroy|recover> --file groups.yaml [options]

recover: after a killed up (kill -9, a lost CI runner): removes the dead run's lock,
refreshes with its pending creates cleared, and runs up adopting exactly the groups
whose create was pending. Use the groups file of the interrupted run.

Options:
  --file, -f PATH        the groups file (YAML or JSON): { groups: [ { name, userGroupId, ... } ] }
  --stack, -s NAME       the stack (default: "default")
  --backend-url URL      Pulumi backend (default: PULUMI_BACKEND_URL, else a file backend
                         in .user-groups/state next to the groups file)
  --yes, -y              apply without asking (required for up/destroy when not on a terminal)
  --json                 print one JSON document instead of progress and a table
  --show-secrets         with --json: include each group's token
  --expect-no-changes    preview/refresh: exit 3 when anything would change (drift check)
  --parallel N           resource operations at once (default: Pulumi's)
  --help, -h             this text

Credentials: user-groups:baseUrl / user-groups:apiKey stack config, or USER_GROUPS_BASE_URL /
USER_GROUPS_API_KEY (USER_GROUPS_*_<PROFILE> for profiles). Secrets passphrase:
PULUMI_CONFIG_PASSPHRASE.
Exit codes: 0 done, 1 failed, 2 bad usage or groups file, 3 changes with --expect-no-changes.`;

export class UsageError extends Error {}

export type CliOperation = Operation | "recover";

export interface CliArgs {
  readonly operation: CliOperation;
  readonly file: string;
  readonly stack: string;
  readonly backendUrl?: string;
  readonly yes: boolean;
  readonly json: boolean;
  readonly showSecrets: boolean;
  readonly expectNoChanges: boolean;
  readonly parallel?: number;
}

const OPERATIONS: readonly CliOperation[] = ["preview", "up", "refresh", "destroy", "recover"];

export function parseCliArgs(argv: readonly string[]): CliArgs | "help" {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        file: { type: "string", short: "f" },
        stack: { type: "string", short: "s" },
        "backend-url": { type: "string" },
        yes: { type: "boolean", short: "y", default: false },
        json: { type: "boolean", default: false },
        "show-secrets": { type: "boolean", default: false },
        "expect-no-changes": { type: "boolean", default: false },
        parallel: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return "help";
  const [operation, ...extra] = positionals;
  if (!operation || !OPERATIONS.includes(operation as CliOperation)) {
    throw new UsageError(`the first argument must be one of ${OPERATIONS.join(", ")}${operation ? `, not "${operation}"` : ""}`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (values.stack !== undefined && !isValidStackName(values.stack)) {
    throw new UsageError('--stack takes letters, digits, "-", "_" and "." (at most 100), optionally as org/stack or org/project/stack');
  }
  if (!values.file) throw new UsageError("--file is required");
  if (values["expect-no-changes"] && operation !== "preview" && operation !== "refresh") {
    throw new UsageError("--expect-no-changes goes with preview or refresh");
  }
  if (values["show-secrets"] && !values.json) throw new UsageError("--show-secrets goes with --json (tokens are never printed in tables)");
  let parallel: number | undefined;
  if (values.parallel !== undefined) {
    parallel = Number(values.parallel);
    if (!Number.isInteger(parallel) || parallel < 1) throw new UsageError("--parallel takes a whole number of 1 or more");
  }
  return {
    operation: operation as CliOperation,
    file: values.file,
    stack: values.stack ?? "default",
    ...(values["backend-url"] !== undefined ? { backendUrl: values["backend-url"] } : {}),
    yes: values.yes ?? false,
    json: values.json ?? false,
    showSecrets: values["show-secrets"] ?? false,
    expectNoChanges: values["expect-no-changes"] ?? false,
    ...(parallel !== undefined ? { parallel } : {}),
  };
}

/** Reads and validates a groups file; every problem names the file and the entry. */
export function readGroupsFile(file: string): unknown[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let document: unknown;
  try {
    document = yaml.load(text, { filename: file, schema: yaml.JSON_SCHEMA });
  } catch (error) {
    throw new UsageError(`${file}: not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  const parsed = groupsDocumentSchema.safeParse(document);
  if (!parsed.success) throw new UsageError(`${file}: must hold one object with a "groups" list, and nothing else`);
  validateGroups(parsed.data.groups, file);
  return parsed.data.groups;
}

const SYMBOL: Record<string, string> = { create: "+", update: "~", replace: "+-", delete: "-", same: " ", refresh: "~", read: " ", failed: "!" };

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Standard input and output are a terminal: someone can confirm. */
  readonly isTty: boolean;
  /** Standard error is a terminal: progress may redraw in place. */
  readonly progressIsTty: boolean;
  readonly confirm: (question: string) => Promise<boolean>;
  readonly env: NodeJS.ProcessEnv;
}

const PHASE_MARK: Record<GroupEvent["phase"], string> = { started: "...", done: "done", failed: "FAILED" };

/** CI: one plain line per step. A terminal: a task list redrawn in place, one row per group. */
export function progressPrinter(write: (text: string) => void, terminal: boolean): (event: GroupEvent) => void {
  const rows = new Map<string, string>();
  let drawn = 0;
  return (event) => {
    if (event.change === "same" || event.change === "read") return;
    const row = `  ${SYMBOL[event.change] ?? "~"} ${event.resourceName}: ${event.change} ${PHASE_MARK[event.phase]}`;
    if (!terminal) {
      write(`${row}\n`);
      return;
    }
    rows.set(event.resourceName, row);
    // Back to the top of the list, then each row cleared and written again.
    let text = drawn > 0 ? `\u001b[${drawn}A` : "";
    for (const line of rows.values()) text += `\u001b[2K${line}\n`;
    drawn = rows.size;
    write(text);
  };
}

export function formatTable(result: RunResult): string {
  const rows = result.groups.map((g) => [
    `${SYMBOL[g.change] ?? " "} ${g.resourceName}`,
    g.profile ?? "default",
    g.apiEnvironmentTag ?? "",
    g.change,
    g.teamId !== undefined ? String(g.teamId) : "",
  ]);
  const header = ["GROUP", "PROFILE", "ENVIRONMENT", "CHANGE", "TEAM ID"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  const s = result.summary;
  const counts = `${s.create} create, ${s.update} update, ${s.replace} replace, ${s.delete} delete, ${s.same} unchanged`;
  return [
    line(header),
    ...rows.map(line),
    "",
    `${result.operation} of stack "${result.stack}": ${counts}`,
  ].join("\n");
}

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

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let args: CliArgs | "help";
  let groups: unknown[];
  try {
    args = parseCliArgs(argv);
    if (args === "help") {
      io.stdout(`${USAGE}\n`);
      return EXIT_OK;
    }
    groups = readGroupsFile(args.file);
  } catch (error) {
    if (error instanceof UsageError || error instanceof GroupsValidationError) {
      io.stderr(`user-groups: ${error.message}\n${error instanceof UsageError ? "Run user-groups --help for usage.\n" : ""}`);
      return EXIT_USAGE;
    }
    throw error;
  }

  const changing = args.operation === "up" || args.operation === "destroy" || args.operation === "recover";
  if (changing && !args.yes && !io.isTty) {
    io.stderr(`user-groups: refusing to ${args.operation} without --yes: not on a terminal, so nobody can confirm.\n`);
    return EXIT_USAGE;
  }
  const base: RunOptions & { groups: unknown[] } = {
    stack: args.stack,
    workDir: path.join(path.dirname(path.resolve(args.file)), ".user-groups"),
    ...(args.backendUrl !== undefined ? { backendUrl: args.backendUrl } : {}),
    ...(args.parallel !== undefined ? { parallel: args.parallel } : {}),
    groups,
  };
  // A fresh progress list for each run (the confirmation preview is a run of its own).
  const options = () => (args.json ? base : { ...base, onEvent: progressPrinter(io.stderr, io.progressIsTty) });

  try {
    if (changing && !args.yes) {
      const preview = args.operation === "up" ? await previewUserGroups(options()) : undefined;
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
    let result: RunResult;
    switch (args.operation) {
      case "preview":
        result = await previewUserGroups(options());
        break;
      case "up":
        result = await provisionUserGroups(options());
        break;
      case "refresh":
        result = await refreshUserGroups(options());
        break;
      case "destroy":
        result = await destroyUserGroups(options());
        break;
      case "recover": {
        const report = await recoverStack(options());
        for (const lock of report.removedLocks) io.stderr(`user-groups: removed the stale lock ${lock}\n`);
        for (const file of report.repairedFiles) io.stderr(`user-groups: removed ${file} (torn by the interrupted write)\n`);
        if (report.pending.length > 0) io.stderr(`user-groups: cleared ${report.pending.length} pending operations\n`);
        if (report.adopted.length > 0) io.stderr(`user-groups: adopted the groups whose create was pending: ${report.adopted.join(", ")}\n`);
        for (const name of report.undeclaredPendingCreates) {
          io.stderr(`user-groups: warning: ${name} was being created but is no longer in the groups file; it may exist on the server\n`);
        }
        result = report.up;
        break;
      }
    }
    io.stdout(args.json ? `${JSON.stringify(jsonDocument(result, args.showSecrets), null, 2)}\n` : `${formatTable(result)}\n`);
    if (args.expectNoChanges && result.changed) {
      io.stderr(`user-groups: ${args.operation} found changes in stack "${args.stack}" (--expect-no-changes).\n`);
      return EXIT_CHANGES;
    }
    return EXIT_OK;
  } catch (error) {
    const message =
      error instanceof StackLockedError ||
      error instanceof LiveLockError ||
      error instanceof GroupsValidationError ||
      error instanceof UntrustedWorkspaceError
        ? error.message
        : describeRunFailure(error);
    io.stderr(`user-groups: ${args.operation} of stack "${args.stack}" failed: ${message}\n`);
    return error instanceof GroupsValidationError ? EXIT_USAGE : EXIT_FAILED;
  }
}

/** Pulumi's CommandError carries the whole CLI transcript; keep the diagnostic lines. */
function describeRunFailure(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text.split("\n").map((l) => l.trim());
  const errors = lines.filter((l) => /^error:/i.test(l) && !/update failed|preview failed|refresh failed|destroy failed/i.test(l));
  return errors.length > 0 ? errors.map((l) => l.replace(/^error:\s*/i, "")).join("\n  ") : (lines.find((l) => l.length > 0) ?? "unknown error");
}

if (require.main === module) {
  const io: CliIo = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    isTty: Boolean(process.stdin.isTTY && process.stdout.isTTY),
    progressIsTty: Boolean(process.stderr.isTTY),
    env: process.env,
    confirm: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return /^y(es)?$/i.test((await rl.question(question)).trim());
      } finally {
        rl.close();
      }
    },
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`user-groups: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = EXIT_FAILED;
    },
  );
}
