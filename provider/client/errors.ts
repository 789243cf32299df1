// Typed failures of the HTTP client. Every message says what failed in words a
// user can act on, and is built from redacted parts only.
import { type ApiMethod, OPERATION_TITLES } from "../wire/operations";
import { foreignErrorCode } from "../wire/error-codes";
import { UserGroupsError } from "../wire/errors";
import type { Environment } from "../wire/schemas";

export type FailureKind =
  | "http" // the service answered with a failure
  | "network" // no answer: refused, reset, timed out
  | "invalid_response"; // an answer we cannot read

export interface ApiErrorDetails {
  readonly kind: FailureKind;
  readonly method: ApiMethod;
  readonly baseUrl: string;
  readonly userGroupId?: string;
  readonly environment?: Environment;
  readonly status?: number;
  /** The service's error code, or for network failures the system code (ECONNREFUSED, ...). */
  readonly code?: string;
  /** The service's message, redacted. */
  readonly serverMessage?: string;
  readonly attempts: number;
  /** True when the request may have been carried out although no answer arrived. */
  readonly ambiguous: boolean;
}

// The class carries every detail as a field of its own (declaration merging).
// `code` is the service's error code (W3) or the system's (ECONNREFUSED, ...);
// without one, the kind of failure ("http", "network", "invalid_response"). The
// W3 codes and the kinds are in the catalogue (wire/error-codes.ts); any other
// code is kept as it came, a ForeignErrorCode (this is the only class with one).
export interface UserGroupApiError extends Omit<ApiErrorDetails, "code"> {}
export class UserGroupApiError extends UserGroupsError {
  /** The details as given: what a copy of this error (e.g. marked ambiguous) starts from. */
  readonly details: ApiErrorDetails;

  constructor(details: ApiErrorDetails, options?: { cause?: unknown }) {
    super(foreignErrorCode(details.code ?? details.kind), describeFailure(details), options);
    this.name = "UserGroupApiError";
    const { code: _code, ...rest } = details;
    Object.assign(this, rest);
    this.details = details;
  }

  /** The service said the group (or the token) is unknown in this key's environment. */
  get isNotFound(): boolean {
    return this.kind === "http" && this.status === 404 && this.code === "user_group_not_found";
  }

  /** The service refused the request for this key (a read-only key asked to change something). */
  get isForbidden(): boolean {
    return this.kind === "http" && this.status === 403 && this.code === "forbidden";
  }
}

/**
 * What failed, one line: `subject` names the request (by default the interface's
 * title of its method, "Update User"; the provider names the Pulumi operation
 * instead, since a refresh reads with a PUT); `hint` adds what to do where one
 * fits every caller.
 */
export function describeFailure(d: ApiErrorDetails, subject: string = OPERATION_TITLES[d.method], hint = true): string {
  const what = `${subject} (${d.method} ${d.baseUrl}/api/user)`;
  const target = [
    d.userGroupId !== undefined ? `user_group_id "${d.userGroupId}"` : undefined,
    d.environment !== undefined ? `environment ${d.environment}` : undefined,
  ]
    .filter(Boolean)
    .join(", ");
  const tries = d.attempts === 1 ? "1 attempt" : `${d.attempts} attempts`;
  const head = `${what}${target ? ` for ${target}` : ""} failed after ${tries}`;
  const advice = hint ? hintFor(d) : "";
  switch (d.kind) {
    case "http":
      return `${head}: HTTP ${d.status}${d.code ? ` ${d.code}` : ""}${d.serverMessage ? `: ${d.serverMessage}` : ""}${advice}`;
    case "network":
      return `${head}: no answer from ${d.baseUrl}${d.code ? ` (${d.code})` : ""}${d.serverMessage ? `: ${d.serverMessage}` : ""}${
        d.ambiguous ? "; the request may have been carried out" : ""
      }`;
    case "invalid_response":
      return `${head}: unreadable answer${d.status !== undefined ? ` (HTTP ${d.status})` : ""}: ${d.serverMessage ?? "not the expected JSON"}`;
  }
}

function hintFor(d: ApiErrorDetails): string {
  if (d.status === 401) return " (check the API key: config user-groups:apiKey or USER_GROUPS_API_KEY)";
  if (d.status === 403) return " (this API key is read-only; use a read-write key to change groups)";
  if (d.status === 429) return " (rate limited; retries ran out)";
  return "";
}
