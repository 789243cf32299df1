// What the CLI talks to (its streams, a terminal or not, the environment), and
// the only ways it writes text of its own there: every message and document
// passes terminalMessage / terminalJson, so that no id, name, host name or
// message of the service's or Pulumi's can drive the terminal.
import { terminalJson, terminalMessage } from "./output";
import type { ErrorCode, ForeignErrorCode } from "../wire/error-codes";

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Standard input and output are a terminal: someone can confirm. */
  readonly isTty: boolean;
  /** Standard error is a terminal: progress may redraw in place. */
  readonly progressIsTty: boolean;
  /** Width of the terminal progress is drawn on. */
  readonly columns?: number;
  readonly confirm: (question: string) => Promise<boolean>;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * The version of the shape of every JSON document the CLI prints (results,
 * drift reports, validation, errors): docs/cli-json.md. A field added keeps
 * it; a field removed or changed in meaning raises it.
 */
export const JSON_SCHEMA_VERSION = 1;

/** A line on stderr, `user-groups: ` first; its outside text escaped. */
export function tell(io: CliIo, message: string): void {
  io.stderr(`user-groups: ${terminalMessage(message)}\n`);
}

/** One JSON document on stdout, schemaVersion first. */
export function printJson(io: CliIo, document: object): void {
  io.stdout(`${terminalJson({ schemaVersion: JSON_SCHEMA_VERSION, ...document })}\n`);
}

export interface CliFailure {
  /** The error's stable code (UserGroupsError.code, catalogued in wire/error-codes.ts), for scripts. */
  readonly code: ErrorCode | ForeignErrorCode;
  /** What went wrong and what to do, for a person. */
  readonly message: string;
  readonly exitCode: number;
  /** Printed after the message on stderr only (e.g. where the usage is). */
  readonly note?: string;
}

/** A failure: the message on stderr; with --json also `{"schemaVersion", "error": {"code", "message"}}` on stdout. Returns the exit code. */
export function reportFailure(io: CliIo, failure: CliFailure, json: boolean): number {
  tell(io, failure.message);
  if (failure.note !== undefined) io.stderr(`${terminalMessage(failure.note)}\n`);
  if (json) printJson(io, { error: { code: failure.code, message: failure.message } });
  return failure.exitCode;
}
