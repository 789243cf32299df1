// `user-groups conformance`: the contract's checks against a target (the real
// service, an emulator), each disagreement in a table. It creates and deletes
// groups, so it runs only when switched on: USER_GROUPS_CONFORMANCE=1. The key
// comes from USER_GROUPS_API_KEY, never from the command line.
import { parseArgs } from "node:util";
import { formatDisagreements, readFixture, runConformance, sweepConformance, writeFixture, type ConformanceOptions, type Fixture, type Pace } from "../conformance";
import { systemClock } from "../clock";
import { UserGroupsError } from "../wire/errors";
import type { Environment } from "../wire/schemas";
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./args";
import { type CliIo, printJson, reportFailure } from "./io";
import { terminalMessage } from "./output";

export const CONFORMANCE_SWITCH = "USER_GROUPS_CONFORMANCE";

export const CONFORMANCE_USAGE = `Usage: user-groups conformance --base-url URL [options]

Runs the contract's checks against URL with the key in USER_GROUPS_API_KEY and
lists every disagreement. It creates and deletes groups: it runs only with
${CONFORMANCE_SWITCH}=1 in the environment.

  --base-url URL        the target (default USER_GROUPS_BASE_URL); https://, or
                        http:// for a loopback host
  --prefix P            every id created starts with P-<run id>- (3+ characters,
                        default ugconf)
  --environment ENV     the key's environment, Customer or Testing, if known (a
                        declared Customer is refused before any request)
  --allow-customer      run with a key of the Customer environment
  --rate-limit N/S|off  pace (default 150/60; at most the documented 180/60, and
                        off, only for a loopback target)
  --ledger FILE         where the ids it may create are written first (default
                        .user-groups-conformance-ledger.json)
  --sweep               delete the leftovers of earlier runs with this prefix
  --record FILE         write the target's answers (facts, no token or key) to FILE
  --compare FILE        compare the target with FILE's facts instead of the contract
  --check ID            run only this check (repeatable)
  --json                print the report as JSON`;

function usage(message: string): UserGroupsError {
  return new UserGroupsError("usage", message);
}

function parsePace(text: string | undefined): Pace | "off" | undefined {
  if (text === undefined) return undefined;
  if (text === "off") return "off";
  const m = /^(\d{1,6})\/(\d{1,6})$/.exec(text);
  if (m === null || Number(m[1]) < 1 || Number(m[2]) < 1) throw usage(`--rate-limit must be N/SECONDS (e.g. 150/60) or off`);
  return { requests: Number(m[1]), windowSeconds: Number(m[2]) };
}

export async function runConformanceCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let json = argv.includes("--json");
  try {
    const { values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        "base-url": { type: "string" },
        prefix: { type: "string" },
        environment: { type: "string" },
        "allow-customer": { type: "boolean" },
        "rate-limit": { type: "string" },
        ledger: { type: "string" },
        sweep: { type: "boolean" },
        record: { type: "string" },
        compare: { type: "string" },
        check: { type: "string", multiple: true },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
    json = values.json === true;
    if (values.help === true) {
      io.stdout(`${CONFORMANCE_USAGE}\n`);
      return EXIT_OK;
    }
    const switched = io.env[CONFORMANCE_SWITCH];
    if (switched !== "1" && switched !== "true") {
      throw new UserGroupsError("conformance_not_enabled", `user-groups conformance creates and deletes groups on the target: set ${CONFORMANCE_SWITCH}=1 to run it`);
    }
    const baseUrl = values["base-url"] ?? io.env["USER_GROUPS_BASE_URL"];
    if (baseUrl === undefined || baseUrl === "") throw usage("--base-url is required (or USER_GROUPS_BASE_URL)");
    const environment = values.environment;
    if (environment !== undefined && environment !== "Customer" && environment !== "Testing") throw usage("--environment must be Customer or Testing");
    if (values.record !== undefined && values.compare !== undefined) throw usage("--record and --compare do not go together");
    const pace = parsePace(values["rate-limit"]);
    const common = {
      baseUrl,
      apiKey: io.env["USER_GROUPS_API_KEY"] ?? "",
      ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
      ...(pace === undefined ? {} : { pace }),
      ...(values.ledger === undefined ? {} : { ledger: values.ledger }),
    };
    if (values.sweep === true) {
      const swept = await sweepConformance(common);
      if (json) printJson(io, { sweep: swept });
      else io.stdout(`swept ${swept.swept} groups${swept.left.length > 0 ? `; ${swept.left.length} could not be deleted` : ""}\n`);
      return swept.left.length > 0 ? EXIT_FAILED : EXIT_OK;
    }
    const fixture: Fixture | undefined = values.compare === undefined ? undefined : readFixture(values.compare);
    const options: ConformanceOptions = {
      ...common,
      ...(environment === undefined ? {} : { environment: environment as Environment }),
      ...(values["allow-customer"] === true ? { allowCustomer: true } : {}),
      ...(fixture === undefined ? {} : { fixture }),
      ...(values.check === undefined ? {} : { only: values.check }),
    };
    const report = await runConformance(options);
    if (values.record !== undefined) {
      const checks: Fixture["checks"] = {};
      for (const r of report.results) if (r.skipped === undefined && r.error === undefined) checks[r.id] = r.observed;
      writeFixture(values.record, { version: 1, target: report.target, recordedAt: new Date(systemClock.now()).toISOString(), readOnly: report.readOnly, checks });
    }
    if (json) printJson(io, { conformance: report });
    else io.stdout(terminalMessage(formatDisagreements(report)));
    if (values.record !== undefined) {
      // Recording takes what the target answers; its disagreements with the contract are still shown.
      return EXIT_OK;
    }
    if (report.disagreements.length > 0) {
      if (!json) io.stderr(`user-groups: ${report.disagreements.length} disagreement(s) (conformance_disagreement)\n`);
      return EXIT_FAILED;
    }
    return EXIT_OK;
  } catch (error) {
    if (error instanceof UserGroupsError) {
      const exitCode = error.code === "conformance_disagreement" ? EXIT_FAILED : error.code === "usage" || error.code === "conformance_not_enabled" || error.code === "conformance_refused" || error.code === "invalid_fixture" ? EXIT_USAGE : EXIT_FAILED;
      return reportFailure(io, { code: error.code, message: error.message, exitCode, ...(error.code === "usage" ? { note: "Run user-groups conformance --help for usage." } : {}) }, json);
    }
    if (error instanceof TypeError && "code" in error && String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")) {
      // parseArgs quotes the argument; never echo it (a key could be in it).
      return reportFailure(io, { code: "usage", message: "unknown or malformed option", exitCode: EXIT_USAGE, note: "Run user-groups conformance --help for usage." }, json);
    }
    throw error;
  }
}
