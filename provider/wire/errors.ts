// The one base of every error this package throws, in the wire layer so that
// every layer (and the fake server) can derive from it. `code` is stable and
// machine-readable (snake_case, as the service's own error codes are), one of
// the catalogue's (error-codes.ts: each code, what it means, who throws it), so
// a caller branches on it or on `instanceof`, never on the message; `cause`
// keeps the error underneath (an undici failure, Pulumi's own error).
import type { ErrorCode, ForeignErrorCode } from "./error-codes";

export class UserGroupsError extends Error {
  /** A code of the catalogue; only a `UserGroupApiError` may carry a foreign one (the service's or the system's, as it came). */
  readonly code: ErrorCode | ForeignErrorCode;

  constructor(code: ErrorCode | ForeignErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UserGroupsError";
    this.code = code;
  }
}
