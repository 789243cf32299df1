#!/usr/bin/env node
// `user-groups`: the GitOps entry point. A groups file in a repository is
// previewed on a pull request, applied on merge, and checked for drift on a
// schedule. Exit codes: 0 done, 1 the run failed, 2 bad usage or groups file,
// 3 changes with --expect-no-changes, or drift found.
import "../compile-cache"; // first: it covers the modules loaded after it
import { createInterface } from "node:readline/promises";
import { type GroupSpec, GroupsValidationError } from "../automation/groups-spec";
import { type CliArgs, EXIT_FAILED, EXIT_OK, EXIT_USAGE, parseCliArgs, USAGE, UsageError } from "./args";
import { readGroupsFile } from "./groups-file";
import type { CliIo } from "./io";

export { type CliArgs, type CliOperation, EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE, parseCliArgs, UsageError } from "./args";
export { readGroupsFile } from "./groups-file";
export type { CliIo } from "./io";
export { progressPrinter } from "./progress";
export { formatDriftTable, formatTable } from "./table";

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let args: CliArgs | "help";
  let groups: GroupSpec[] | undefined;
  try {
    args = parseCliArgs(argv);
    if (args === "help") {
      io.stdout(`${USAGE}\n`);
      return EXIT_OK;
    }
    groups = args.file !== undefined ? readGroupsFile(args.file) : undefined;
  } catch (error) {
    if (error instanceof UsageError || error instanceof GroupsValidationError) {
      io.stderr(`user-groups: ${error.message}\n${error instanceof UsageError ? "Run user-groups --help for usage.\n" : ""}`);
      return EXIT_USAGE;
    }
    throw error;
  }
  if (args.operation === "validate") {
    io.stdout(args.json ? `${JSON.stringify({ file: args.file, groups: groups?.length ?? 0, valid: true })}\n` : `${args.file}: ${groups?.length ?? 0} groups, valid\n`);
    return EXIT_OK;
  }

  const { runEngineCommand } = await import("./engine-commands.js");
  return runEngineCommand(args, groups, io);
}

if (require.main === module) {
  const io: CliIo = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    isTty: Boolean(process.stdin.isTTY && process.stdout.isTTY),
    progressIsTty: Boolean(process.stderr.isTTY),
    ...(process.stderr.columns ? { columns: process.stderr.columns } : {}),
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
