// Errors at the edge of the Pulumi engine, in our vocabulary. What Pulumi's
// Automation API throws is a CommandError holding the CLI's own text (a
// missing CLI is "code: -2", a wrong passphrase "getting stack configuration:
// get stack secrets manager: incorrect passphrase"); callers of this library
// are promised UserGroupsErrors with stable codes. Each error here says what
// went wrong and, separately, what to do, worded for who called: the CLI's
// users set environment variables and flags, a library's users pass options.
import { CommandError } from "@pulumi/pulumi/automation";
import type { ErrorCode } from "../../../wire/error-codes";
import { UserGroupsError } from "../../../wire/errors";
import { isEngineCopyUrl } from "../../../backends";

/** Who is told what to do: the `user-groups` command's user, or a program calling this library. */
export type HintAudience = "cli" | "library";

/** An error whose advice depends on the caller: `message` has the library's; `messageFor("cli")` the command line's. */
export class EngineEdgeError extends UserGroupsError {
  constructor(
    code: ErrorCode,
    /** What went wrong, for any caller. */
    readonly problem: string,
    readonly hints: Readonly<Record<HintAudience, string>>,
    options?: { cause?: unknown },
  ) {
    super(code, `${problem} ${hints.library}`, options);
    this.name = "EngineEdgeError";
  }

  messageFor(audience: HintAudience): string {
    return `${this.problem} ${this.hints[audience]}`;
  }
}

export class PulumiCliMissingError extends EngineEdgeError {
  constructor(options?: { cause?: unknown }) {
    super(
      "pulumi_cli_missing",
      "The Pulumi CLI (`pulumi`) was not found on PATH; it runs the engine. Nothing was changed.",
      {
        cli: "Install it (https://www.pulumi.com/docs/install/, in GitHub Actions `pulumi/actions` with a pinned `pulumi-version`) and put it on PATH.",
        library: "Install it and put it on PATH, or pass its location to this library's process through PATH in the `envVars` option.",
      },
      options,
    );
    this.name = "PulumiCliMissingError";
  }
}

export class MissingPassphraseError extends EngineEdgeError {
  constructor(readonly empty: boolean) {
    super(
      "missing_passphrase",
      empty
        ? "The passphrase of the stack's secrets is empty (in GitHub Actions a secret is empty on a pull request from a fork): an empty passphrase protects nothing. Nothing was changed."
        : "No passphrase for the stack's secrets. Nothing was changed.",
      {
        cli: "Set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) in the environment of user-groups.",
        library: "Pass the `passphrase` option, or set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) in the environment or in `envVars`.",
      },
    );
    this.name = "MissingPassphraseError";
  }
}

export class WrongPassphraseError extends EngineEdgeError {
  constructor(readonly stackName: string, options?: { cause?: unknown }) {
    super(
      "wrong_passphrase",
      `The passphrase does not decrypt the secrets of stack "${stackName}" (it is not the one the stack was created with). Nothing was changed.`,
      {
        cli: "Set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to the passphrase the stack was created with.",
        library: "Pass the passphrase the stack was created with as the `passphrase` option (or PULUMI_CONFIG_PASSPHRASE).",
      },
      options,
    );
    this.name = "WrongPassphraseError";
  }
}

export class BackendUnreachableError extends EngineEdgeError {
  constructor(
    code: "backend_unreachable" | "backend_not_found",
    /** Where the backend is, without user name, password or query. */
    readonly backend: string | undefined,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      code,
      `${code === "backend_not_found" ? "The state backend does not exist" : "The state backend cannot be reached"}${backend ? ` (${backend})` : ""}: ${detail}. Nothing was changed.`,
      {
        cli: "Check PULUMI_BACKEND_URL (or --backend-url) and that the backend is up (a file:// backend's directory must exist).",
        library: "Check the `backendUrl` option (or PULUMI_BACKEND_URL) and that the backend is up (a file:// backend's directory must exist).",
      },
      options,
    );
    this.name = "BackendUnreachableError";
  }
}

/** Any other failure of a Pulumi command: its own "error:" lines, as a UserGroupsError (cause: Pulumi's CommandError). */
export class PulumiCommandError extends UserGroupsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("pulumi_command_failed", message, options);
    this.name = "PulumiCommandError";
  }
}

/** What a CommandError carries, private in its type: the CLI's stderr and the spawn error (a missing CLI). */
interface CommandResultFields {
  readonly commandResult?: { readonly stderr?: unknown; readonly err?: { readonly code?: unknown } };
}

/** The text Pulumi's CLI wrote for a failed command (its stderr), or the error's message. */
function pulumiText(error: CommandError): string {
  const stderr = (error as unknown as CommandResultFields).commandResult?.stderr;
  return typeof stderr === "string" && stderr.length > 0 ? stderr : error.message;
}

/** The lines of a CLI's text that say what failed (its "error:" lines without the generic closing ones), else its first line. */
export function pulumiErrorLines(text: string): string[] {
  const lines = text.split("\n").map((l) => l.trim());
  const errors = lines.filter((l) => /^error:/i.test(l) && !/update failed|preview failed|refresh failed|destroy failed/i.test(l));
  if (errors.length > 0) return [...new Set(errors.map((l) => l.replace(/^error:\s*/i, "")))];
  return [lines.find((l) => l.length > 0) ?? "unknown error"];
}

/** A backend URL as a place: scheme, host and path; never a user name, password, query or fragment. */
export function backendPlace(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return undefined;
  }
}

const BACKEND_NOT_FOUND = /unable to open state (?:directory|database) "([^"]*)".*(no such file or directory)|(NoSuchBucket|ContainerNotFound|bucket does not exist)/is;
const BACKEND_UNREACHABLE =
  /unable to open state (?:directory|database) "([^"]*)"|failed to ping PostgreSQL|(connection refused|no such host|i\/o timeout|network is unreachable|could not reach)/i;

/**
 * A PostgreSQL backend's session cut or ended under the engine: the server's
 * own words (SQLSTATE class 08, 57P01-57P03), Go's driver's, or a reset socket
 * while the engine read or wrote its state (never the text of a provider's request).
 */
const BACKEND_SESSION_GONE =
  /(terminating connection due to administrator command|the database system is (?:starting up|shutting down|in recovery mode)|driver: bad connection|SQLSTATE (?:08[0-9A-Z]{3}|57P0[1-3]))|(?:checkpoint|snapshot|state|postgres|lock)[^\n]*?(connection reset by peer|broken pipe)/i;

/**
 * Pulumi's CommandError in our vocabulary: a missing CLI, a wrong passphrase,
 * an unreachable or missing backend, else PulumiCommandError. Anything else
 * (ours already, or not Pulumi's) is returned as it is.
 */
export function translateEngineError(error: unknown, stackName: string): unknown {
  if (!(error instanceof CommandError) || error.name === "ConcurrentUpdateError") return error;
  const err = (error as unknown as CommandResultFields).commandResult?.err;
  const text = pulumiText(error);
  if (err?.code === "ENOENT" || /\bspawn \S*pulumi ENOENT\b/.test(text)) return new PulumiCliMissingError({ cause: error });
  if (/incorrect passphrase/i.test(text)) return new WrongPassphraseError(stackName, { cause: error });
  const notFound = BACKEND_NOT_FOUND.exec(text);
  // A run's private copy of an object-store stack removed under a read (its run let go of the stack meanwhile): ask again.
  if (notFound?.[1] && isEngineCopyUrl(notFound[1])) {
    return new BackendUnreachableError("backend_unreachable", undefined, "the run's private copy of the stack was removed under this read (the run let go of the stack); ask again", { cause: error });
  }
  if (notFound) return new BackendUnreachableError("backend_not_found", notFound[1] ? backendPlace(notFound[1]) : undefined, notFound[2] ?? notFound[3]!, { cause: error });
  // The engine's session with a PostgreSQL backend cut or ended under it (a reset, a restart): retryable, as unreachable.
  const gone = BACKEND_SESSION_GONE.exec(text);
  if (gone) return new BackendUnreachableError("backend_unreachable", undefined, `its connection was cut (${gone[1] ?? gone[2]}); ask again`, { cause: error });
  const unreachable = BACKEND_UNREACHABLE.exec(text);
  if (unreachable) {
    const line = pulumiErrorLines(text)[0]!;
    // The last clause of Pulumi's line ("...: connect: connection refused"): never the URL, which may hold a password.
    const detail = unreachable[2] ?? line.slice(line.lastIndexOf(": ") + 2);
    return new BackendUnreachableError("backend_unreachable", unreachable[1] ? backendPlace(unreachable[1]) : undefined, detail, { cause: error });
  }
  return new PulumiCommandError(pulumiErrorLines(text).join("\n  "), { cause: error });
}
