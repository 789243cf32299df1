// The API key travels in every request's Authorization header, so it may only
// travel encrypted: https, or plain http to a loopback host (the traffic never
// leaves the machine: the fake server, a local tunnel). Anything else needs the
// user's explicit opt-in.
import { isLoopbackHost } from "../wire/loopback";
import { UserGroupsError } from "../wire/errors";

export class InsecureTransportError extends UserGroupsError {
  constructor(origin: string) {
    super(
      "insecure_transport",
      `Refusing to send the API key to ${origin} over plain HTTP: it would travel unencrypted. ` +
        "Use an https:// base URL; plain http is allowed without asking only for loopback hosts (localhost, 127.0.0.1, ::1). " +
        "To allow it anyway, set the stack config user-groups:allowInsecureHttp to true or the environment variable USER_GROUPS_ALLOW_INSECURE_HTTP=1.",
    );
    this.name = "InsecureTransportError";
  }
}

/** Throws unless `url` is https, http to a loopback host, or http with the opt-in. */
export function assertSecureTransport(url: URL, allowInsecureHttp: boolean): void {
  if (url.protocol === "https:" || allowInsecureHttp) return;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return;
  throw new InsecureTransportError(url.origin);
}
