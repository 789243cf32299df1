// The one base of every error this package throws, in the wire layer so that
// every layer (and the fake server) can derive from it. `code` is stable and
// machine-readable (snake_case, as the service's own error codes are), so a
// caller branches on it or on `instanceof`, never on the message; `cause` keeps
// the error underneath (an undici failure, Pulumi's own error).
export class UserGroupsError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UserGroupsError";
    this.code = code;
  }
}
