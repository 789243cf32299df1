// The `user-groups` command line: operations, options and their rules.
import { parseArgs } from "node:util";
import { didYouMean } from "../wire/did-you-mean";
import { backendUrlSecrets, parseDurationMs, type Operation, isValidStackName } from "../automation/offline";
import { UserGroupsError } from "../wire/errors";
import { PLAN_COMMIT_PATTERN, PLAN_RUN_PATTERN, type PlanOrigin } from "./reviewed-plan";

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
/** --expect-no-changes and there are changes; drift found. */
export const EXIT_CHANGES = 3;

export const USAGE = `Usage: user-groups <preview|up|refresh|destroy|drift|recover|validate> [--file groups.yaml] [options]

  preview, up         what would change / apply the groups file (--file required)
  refresh             read every group of the stack back into the state
  destroy             delete every group of the stack
  drift               read every group from the service and report what drifted, changing
                      nothing (neither the state nor the service); with --file also what up
                      would change. Exit 3 on drift. Works with a read-only API key.
  recover             after a killed up (kill -9, a lost CI runner): removes the dead run's
                      lock, refreshes with its pending creates cleared, and runs up adopting
                      exactly the groups whose create was pending (--file of the interrupted run)
  validate            check a groups file offline (no engine, no credentials)

refresh, destroy and drift need no groups file when the stack exists.

Options:
  --file, -f PATH        the groups file (YAML or JSON): { groups: [ { name, userGroupId, ... } ] }
  --stack, -s NAME       the stack (default: "default")
  --backend-url URL      Pulumi backend (default: PULUMI_BACKEND_URL, else a file backend
                         in .user-groups/state next to the groups file, or in the current
                         directory without --file). A URL with a password goes in
                         PULUMI_BACKEND_URL, never on the command line
  --yes, -y              apply without asking (required for up/destroy when not on a terminal)
  --force                up/destroy on a UserGroupFleet's stack (refused without it: the whole
                         set would delete the groups the fleet made)
  --allow-delete-all     up/recover: allow a run that deletes every group of the stack
                         (refused without it, e.g. for an empty groups file)
  --max-deletes N        up/recover/destroy: refuse a run that would delete more than N groups
  --rewrite-providers    recover: write this package's own provider code back into the state's
                         groups first (after you reviewed an untrusted_provider_code refusal)
  --break-lease          recover: take the stack's run lease even from a run that still holds it
                         (a file backend's run on another host, or a live pid here, is never
                         taken over by itself: use this once you know that run is gone)
  --json                 print one JSON document instead of progress and a table
  --show-secrets         with --json: include each group's token
  --refresh              preview/up: read every group from the service first, so that a group
                         deleted or changed out of band is put back (needs an API key)
  --expect-no-changes    preview/refresh: exit 3 when anything would change
  --plan-file PATH       preview: write the changes it found (and their digest) to PATH;
                         up: apply only if a preview now finds exactly those changes, else
                         exit 2 naming each difference (what merges is what was reviewed)
  --plan-commit SHA      with --plan-file and --plan-run: preview: record that the plan is
                         the preview of commit SHA (a pull request's head); up: apply it
                         only if it is (else exit 2, plan_origin_mismatch)
  --plan-run ID          with --plan-file and --plan-commit: preview: record the CI run that
                         made the plan; up: apply it only if that run made it
  --summary-file PATH    preview/up/drift: write a Markdown summary for reviewers (no tokens);
                         without it, appended to GITHUB_STEP_SUMMARY when that is set
  --lock-timeout DUR     wait up to DUR (e.g. 90s, 10m) for a stack another run holds
                         (default: fail at once)
  --parallel N           resource operations at once (default: Pulumi's)
  --help, -h             this text (after a command: that command's)
  --version              the version of user-groups

Credentials come from the environment, never from a command line: USER_GROUPS_BASE_URL and
USER_GROUPS_API_KEY (USER_GROUPS_BASE_URL_<PROFILE> / USER_GROUPS_API_KEY_<PROFILE> for a
profile); the secrets passphrase PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE);
the backend PULUMI_BACKEND_URL.
Exit codes: 0 done, 1 failed, 2 bad usage or groups file, 3 changes with --expect-no-changes
or drift found.`;

/** A command line, flag or groups file the CLI refuses (exit code 2). */
export class UsageError extends UserGroupsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("usage", message, options);
    this.name = "UsageError";
  }
}

export type CliOperation = Operation | "recover" | "drift" | "validate";

/** `--help` (of one command, after it) or `--version`: text to print, nothing to run. */
export interface CliInfoRequest {
  readonly info: "help" | "version";
  readonly operation?: CliOperation;
}

export interface CliArgs {
  readonly operation: CliOperation;
  /** Required for preview, up, recover and validate. */
  readonly file?: string;
  readonly stack: string;
  readonly backendUrl?: string;
  readonly yes: boolean;
  /** up/destroy: run even on a UserGroupFleet's stack (whose groups the file does not list). */
  readonly force: boolean;
  /** up/recover: a run may delete every group of the stack. */
  readonly allowDeleteAll: boolean;
  /** up/recover/destroy: refuse a run that deletes more groups. */
  readonly maxDeletes?: number;
  /** recover: write this package's provider text back into the state first. */
  readonly rewriteProviders: boolean;
  /** recover: take the run lease from a holder that still holds it (a person decided it is gone). */
  readonly breakLease?: boolean;
  readonly json: boolean;
  readonly showSecrets: boolean;
  readonly expectNoChanges: boolean;
  /** preview/up: refresh first. */
  readonly refresh: boolean;
  readonly summaryFile?: string;
  /** preview: where to record the changes it found; up: the reviewed changes it may apply. */
  readonly planFile?: string;
  /** With planFile: the commit and CI run the plan is (preview) or must be (up) the preview of. */
  readonly planOrigin?: PlanOrigin;
  readonly lockTimeoutMs?: number;
  readonly parallel?: number;
}

const OPERATIONS: readonly CliOperation[] = ["preview", "up", "refresh", "destroy", "drift", "recover", "validate"];
const NEED_FILE: readonly CliOperation[] = ["preview", "up", "recover", "validate"];

/** Options that go with some commands only: refused with the others, and left out of their help. */
const ONLY_WITH: Readonly<Record<string, readonly CliOperation[]>> = {
  "--force": ["up", "destroy"],
  "--allow-delete-all": ["up", "recover"],
  "--max-deletes": ["up", "recover", "destroy"],
  "--rewrite-providers": ["recover"],
  "--break-lease": ["recover"],
  "--expect-no-changes": ["preview", "refresh"],
  "--refresh": ["preview", "up"],
  "--summary-file": ["preview", "up", "drift"],
  "--plan-file": ["preview", "up"],
  "--plan-commit": ["preview", "up"],
  "--plan-run": ["preview", "up"],
};
/** validate runs no engine: its help shows only these. */
const VALIDATE_OPTIONS = ["--file", "--json", "--help", "--version"];

function withList(operations: readonly CliOperation[]): string {
  return operations.length === 1 ? operations[0]! : `${operations.slice(0, -1).join(", ")} or ${operations.at(-1)}`;
}

const PARSE_OPTIONS = {
  file: { type: "string", short: "f" },
  stack: { type: "string", short: "s" },
  "backend-url": { type: "string" },
  yes: { type: "boolean", short: "y", default: false },
  force: { type: "boolean", default: false },
  "allow-delete-all": { type: "boolean", default: false },
  "max-deletes": { type: "string" },
  "rewrite-providers": { type: "boolean", default: false },
  "break-lease": { type: "boolean", default: false },
  json: { type: "boolean", default: false },
  "show-secrets": { type: "boolean", default: false },
  "expect-no-changes": { type: "boolean", default: false },
  refresh: { type: "boolean", default: false },
  "summary-file": { type: "string" },
  "plan-file": { type: "string" },
  "plan-commit": { type: "string" },
  "plan-run": { type: "string" },
  "lock-timeout": { type: "string" },
  parallel: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
  version: { type: "boolean", default: false },
} as const;

export { didYouMean };

const suggestion = (word: string, candidates: readonly string[]) => {
  const close = didYouMean(word, candidates);
  return close !== undefined ? ` (did you mean ${close}?)` : "";
};

/** Help of one command: what it does, and only the options that go with it. */
export function commandUsage(operation: CliOperation): string {
  const [, commands = "", rest = ""] = /\n\n([\s\S]*?)\n\n[\s\S]*?Options:\n([\s\S]*)$/.exec(USAGE) ?? [];
  const [options = "", trailer = ""] = rest.split("\n\n", 2).length === 2 ? [rest.slice(0, rest.indexOf("\n\n")), rest.slice(rest.indexOf("\n\n") + 2)] : [rest, ""];
  // An entry is its first line ("  preview, up   ...", "  --file, -f PATH  ...") and its deeper-indented continuation lines.
  const entries = (block: string) => block.split(/\n(?=  \S)/);
  const described = entries(commands).filter((entry) => entry.trimStart().split(/\s{2,}/)[0]!.split(/,\s*/).includes(operation));
  const applicable = entries(options).filter((entry) => {
    const flag = /^\s*(--[a-z-]+)/.exec(entry)?.[1];
    if (flag === undefined) return true;
    if (operation === "validate") return VALIDATE_OPTIONS.includes(flag);
    return ONLY_WITH[flag] === undefined || ONLY_WITH[flag]!.includes(operation);
  });
  const needsFile = NEED_FILE.includes(operation) ? " --file groups.yaml" : " [--file groups.yaml]";
  return [`Usage: user-groups ${operation}${needsFile} [options]`, "", ...described, "", "Options:", ...applicable, "", trailer].join("\n").trimEnd();
}
/** A day: longer is a mistake, not a wait. */
const MAX_LOCK_TIMEOUT_MS = 24 * 3_600_000;

/** Does a URL carry a password (user:password@, or a password query option)? */
function hasPassword(url: string): boolean {
  return backendUrlSecrets(url).length > 0;
}

export function parseCliArgs(argv: readonly string[]): CliArgs | CliInfoRequest {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: PARSE_OPTIONS });
  } catch (error) {
    const unknown = /^Unknown option '([^']+)'/.exec((error as Error).message)?.[1];
    if (unknown === undefined) throw new UsageError((error as Error).message);
    const known = Object.entries(PARSE_OPTIONS).flatMap(([name, spec]) => [`--${name}`, ...("short" in spec ? [`-${spec.short}`] : [])]);
    throw new UsageError(`unknown option ${unknown}${suggestion(unknown.split("=")[0]!, known)}`);
  }
  const { values, positionals } = parsed;
  const [operation, ...extra] = positionals;
  const known = OPERATIONS.includes(operation as CliOperation) ? (operation as CliOperation) : undefined;
  if (values.version) return { info: "version" };
  if (values.help) return { info: "help", ...(known !== undefined ? { operation: known } : {}) };
  if (!operation || known === undefined) {
    throw new UsageError(
      `the first argument must be one of ${OPERATIONS.join(", ")}${operation ? `, not "${operation}"${suggestion(operation, OPERATIONS)}` : ""}`,
    );
  }
  const op = known;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (values.stack !== undefined && !isValidStackName(values.stack)) {
    throw new UsageError('--stack takes letters, digits, "-", "_" and "." (at most 100), optionally as org/stack or org/project/stack');
  }
  let maxDeletes: number | undefined;
  if (values["max-deletes"] !== undefined) {
    maxDeletes = /^\d{1,9}$/.test(values["max-deletes"]) ? Number(values["max-deletes"]) : Number.NaN;
    if (!Number.isInteger(maxDeletes)) throw new UsageError("--max-deletes takes a whole number of 0 or more");
  }
  // A secret never goes on a command line (every local user can read it there): the URL is not repeated.
  if (values["backend-url"] !== undefined && hasPassword(values["backend-url"])) {
    throw new UsageError("--backend-url holds a password: a command line is visible to every local user. Set PULUMI_BACKEND_URL instead.");
  }
  if (!values.file && NEED_FILE.includes(op)) throw new UsageError(`--file is required for ${op}`);
  if (values["show-secrets"] && op === "drift") throw new UsageError("--show-secrets does not go with drift (it reports no tokens)");
  for (const [flag, operations] of Object.entries(ONLY_WITH)) {
    const value = values[flag.slice(2) as keyof typeof values];
    if (value !== undefined && value !== false && !operations.includes(op)) throw new UsageError(`${flag} goes with ${withList(operations)}`);
  }
  if (values["show-secrets"] && !values.json) throw new UsageError("--show-secrets goes with --json (tokens are never printed in tables)");
  for (const [flag, value, pattern, what] of [
    ["--plan-commit", values["plan-commit"], PLAN_COMMIT_PATTERN, "a commit's 40 (or 64) lowercase hex digits"],
    ["--plan-run", values["plan-run"], PLAN_RUN_PATTERN, "a run id: digits, not starting with 0"],
  ] as const) {
    if (value === undefined) continue;
    if (values["plan-file"] === undefined) throw new UsageError(`${flag} goes with --plan-file`);
    if (!pattern.test(value)) throw new UsageError(`${flag} takes ${what}`);
  }
  if ((values["plan-commit"] === undefined) !== (values["plan-run"] === undefined)) throw new UsageError("--plan-commit and --plan-run go together");
  let parallel: number | undefined;
  if (values.parallel !== undefined) {
    parallel = Number(values.parallel);
    if (!Number.isInteger(parallel) || parallel < 1) throw new UsageError("--parallel takes a whole number of 1 or more");
  }
  let lockTimeoutMs: number | undefined;
  if (values["lock-timeout"] !== undefined) {
    lockTimeoutMs = parseDurationMs(values["lock-timeout"]);
    if (lockTimeoutMs === undefined || lockTimeoutMs > MAX_LOCK_TIMEOUT_MS) {
      throw new UsageError('--lock-timeout takes a duration of at most a day: 500ms, 90s, 10m, 1h (a plain number is seconds)');
    }
  }
  return {
    operation: op,
    ...(values.file !== undefined ? { file: values.file } : {}),
    stack: values.stack ?? "default",
    ...(values["backend-url"] !== undefined ? { backendUrl: values["backend-url"] } : {}),
    yes: values.yes ?? false,
    force: values.force ?? false,
    allowDeleteAll: values["allow-delete-all"] ?? false,
    ...(maxDeletes !== undefined ? { maxDeletes } : {}),
    rewriteProviders: values["rewrite-providers"] ?? false,
    ...(values["break-lease"] ? { breakLease: true } : {}),
    json: values.json ?? false,
    showSecrets: values["show-secrets"] ?? false,
    expectNoChanges: values["expect-no-changes"] ?? false,
    refresh: values.refresh ?? false,
    ...(values["summary-file"] !== undefined ? { summaryFile: values["summary-file"] } : {}),
    ...(values["plan-file"] !== undefined ? { planFile: values["plan-file"] } : {}),
    ...(values["plan-commit"] !== undefined && values["plan-run"] !== undefined ? { planOrigin: { commit: values["plan-commit"], run: values["plan-run"] } } : {}),
    ...(lockTimeoutMs !== undefined ? { lockTimeoutMs } : {}),
    ...(parallel !== undefined ? { parallel } : {}),
  };
}
