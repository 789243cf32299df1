// Failures as values: every non-2xx answer of the fake server is an ApiError,
// rendered with the W3 body `{"success":0,"error":{"code","message"}}`.
import { UserGroupsError } from "../provider/wire/errors.js";
import type { ServiceErrorCode, ErrorResponse } from "../provider/wire/schemas.js";

export class ApiError extends UserGroupsError {
  declare readonly code: ServiceErrorCode;

  constructor(
    readonly status: number,
    code: ServiceErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message);
    this.name = "ApiError";
  }
}

/** 405 for a path that answers only `allow`: the message names them, and so does `Allow`. */
export function methodNotAllowed(path: string, allow: readonly string[]): ApiError {
  const list = allow.join(", ");
  return new ApiError(405, "method_not_allowed", `${path} accepts ${list}`, { Allow: list });
}

export function errorBody(code: string, message: string): ErrorResponse {
  return { success: 0, error: { code, message } };
}
