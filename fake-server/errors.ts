// Failures as values: every non-2xx answer of the fake server is an ApiError,
// rendered with the W3 body `{"success":0,"error":{"code","message"}}`.
import { UserGroupsError } from "../provider/wire/errors.js";
import type { ErrorCode, ErrorResponse } from "../provider/wire/schemas.js";

export class ApiError extends UserGroupsError {
  declare readonly code: ErrorCode;

  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message);
    this.name = "ApiError";
  }
}

export function errorBody(code: string, message: string): ErrorResponse {
  return { success: 0, error: { code, message } };
}
