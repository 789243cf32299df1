#!/usr/bin/env node
// `user-groups`: the GitOps entry point. A groups file in a repository is
// previewed on a pull request, applied on merge, and checked for drift on a
// schedule. Exit codes: 0 done, 1 the run failed, 2 bad usage or groups file,
// 3 changes with --expect-no-changes, or drift found.
import "../compile-cache"; // first: it covers the modules loaded after it
import { createInterface } from "node:readline/promises";
import { UserGroupsError } from "../wire/errors";
import { PACKAGE_VERSION } from "../version";
import { type CliArgs, type CliInfoRequest, commandUsage, EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE, parseCliArgs, USAGE } from "./args";
import type { GroupSpec } from "../automation/offline";
import { readGroupsFile } from "./groups-file";
import { type CliIo, printJson, reportFailure } from "./io";
import { terminalMessage, terminalText } from "./output";
import { telemetryRequested } from "../otel-env";
// What an engine command needs (the automation layer, @pulumi/pulumi, OpenTelemetry) is loaded when one starts, not here:
// `--help`, `validate` and a refused groups file load none of it (test/cli/cli-start.test.ts).

export { type CliArgs, type CliInfoRequest, type CliOperation, didYouMean, EXIT_CHANGES, EXIT_FAILED, EXIT_OK, EXIT_USAGE, parseCliArgs, UsageError } from "./args";
export { readGroupsFile } from "./groups-file";
export { type CliIo, JSON_SCHEMA_VERSION } from "./io";
export { progressPrinter } from "./output";
export { formatDriftTable, formatTable } from "./output";
export { terminalJson, terminalMessage, terminalText } from "./output";

/** The command span's outcome, from its exit code. */
function exitOutcome(code: number): string {
  return code === EXIT_OK ? "ok" : code === EXIT_FAILED ? "failed" : code === EXIT_USAGE ? "usage" : code === EXIT_CHANGES ? "changes" : String(code);
}

function isInfoRequest(args: CliArgs | CliInfoRequest): args is CliInfoRequest {
  return "info" in args;
}

/** Bad usage and bad groups files: exit 2, with their code (usage, invalid_groups...). */
function refused(io: CliIo, error: unknown, json: boolean): number {
  if (!(error instanceof UserGroupsError)) throw error;
  const usage = error.code === "usage";
  return reportFailure(io, { code: error.code, message: error.message, exitCode: EXIT_USAGE, ...(usage ? { note: "Run user-groups --help for usage." } : {}) }, json);
}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  // Before the arguments are understood: a usage error under --json is a JSON document too.
  let json = argv.includes("--json");
  if (argv[0] === "conformance") {
    const { runConformanceCommand } = await import("./conformance-command.js");
    return runConformanceCommand(argv.slice(1), io);
  }
  try {
    let args: CliArgs | CliInfoRequest;
    let groups: GroupSpec[] | undefined;
    try {
      args = parseCliArgs(argv);
      if (isInfoRequest(args)) {
        io.stdout(`${args.info === "version" ? PACKAGE_VERSION : args.operation !== undefined ? commandUsage(args.operation) : USAGE}\n`);
        return EXIT_OK;
      }
      json = args.json;
      groups = args.file !== undefined ? readGroupsFile(args.file) : undefined;
    } catch (error) {
      return refused(io, error, json);
    }
    if (args.operation === "validate") {
      if (args.json) printJson(io, { file: args.file, groups: groups?.length ?? 0, valid: true });
      else io.stdout(`${terminalText(args.file ?? "")}: ${groups?.length ?? 0} groups, valid\n`);
      return EXIT_OK;
    }
    const { runEngineCommand } = await import("./engine-commands.js");
    // OpenTelemetry only when the environment asks for it (OTEL_*): the command's span is the root of its runs' spans.
    if (!telemetryRequested(io.env)) return await runEngineCommand(args, groups, io);
    const [{ startTelemetry }, { SpanStatusCode }, { allowedAttributes }] = await Promise.all([
      import("./telemetry-setup.js"),
      import("@opentelemetry/api"),
      import("../telemetry.js"),
    ]);
    const telemetry = await startTelemetry(io.env, { serviceName: "user-groups" }).catch((error: unknown) => {
      io.stderr(`user-groups: OpenTelemetry not started: ${terminalMessage(error instanceof Error ? error.message : String(error))}\n`);
      return undefined;
    });
    if (telemetry === undefined) return await runEngineCommand(args, groups, io);
    const command = args.operation;
    try {
      return await telemetry.inRootSpan(`user-groups ${command}`, { "user_groups.cli.command": command, "user_groups.stack": args.stack }, async (span) => {
        const code = await runEngineCommand(args, groups, io);
        span.setAttributes(allowedAttributes({ "user_groups.outcome": exitOutcome(code) }));
        if (code === EXIT_FAILED || code === EXIT_USAGE) span.setStatus({ code: SpanStatusCode.ERROR });
        return code;
      });
    } finally {
      const gaveUp = await telemetry.shutdown();
      if (gaveUp !== undefined) {
        io.stderr(`user-groups: ${terminalMessage(gaveUp)}\n`);
        // The exporters' requests and retry timers would still hold the process for their own timeout.
        exportAbandoned = true;
      }
    }
  } catch (error) {
    // Not one of ours: a bug, or something underneath (a module that failed to load).
    const message = error instanceof Error ? error.message : String(error);
    return reportFailure(io, { code: error instanceof UserGroupsError ? error.code : "internal_error", message, exitCode: EXIT_FAILED }, json);
  }
}

/** Set when the last telemetry export was given up: the command exits at once rather than wait for the exporters. */
let exportAbandoned = false;

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
      if (exportAbandoned) process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
    },
    (error: unknown) => {
      // main reports every failure itself; this is a failure to report one.
      process.stderr.write(`user-groups: ${terminalMessage(error instanceof Error ? error.message : String(error))}\n`);
      process.exitCode = EXIT_FAILED;
    },
  );
}
