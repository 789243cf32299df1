// The one gate every /__admin/ API request passes (the dashboard's static
// page, script and style are served before it, and hold no data). A web page
// in the user's browser can reach a loopback server: by a form POST (CSRF:
// text/plain, no preflight), or through a DNS name of its own rebound to
// 127.0.0.1 (DNS rebinding: the page's origin then reads the answers). So an admin request must name a loopback host (or
// the configured host) in `Host`, must not come from a browser page of another
// origin, and a POST must be `application/json` (which a cross-origin page
// cannot send without a CORS preflight, and the server grants none).
import type { IncomingMessage } from "node:http";
import { isLoopbackHost } from "../provider/wire/loopback.js";
import { secretEquals } from "./auth.js";
import { ApiError } from "./errors.js";
import { isJsonContentType } from "./http.js";

/** Admin bodies are small (fault rules): anything larger is refused early. */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;

/** The host name of a `Host` header (`[::1]:8080` -> `::1`), lower-cased; undefined when malformed. */
export function hostNameOf(header: string): string | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::\d{1,5})?$/.exec(header.trim());
  return m?.[1]?.replace(/^\[|\]$/g, "").toLowerCase();
}

function forbidden(why: string): ApiError {
  return new ApiError(403, "forbidden", `admin request refused: ${why}`);
}

export interface AdminGuardSettings {
  /** The host the server listens on (`--host`). */
  readonly host: string;
  /** When set, every admin request needs `X-Admin-Token` with this value. */
  readonly adminToken?: string | undefined;
}

/** At start: a server on a non-loopback host must have an admin token, or its admin endpoints would be open to the network. */
export function refuseUnguardedAdmin(settings: AdminGuardSettings): void {
  if (!isLoopbackHost(settings.host) && settings.adminToken === undefined) {
    throw new Error(
      `refusing to listen on non-loopback host ${settings.host} without an admin token: ` +
        "the /__admin/ endpoints would be open to the network (set adminToken / --admin-token)",
    );
  }
}

/**
 * Throws ApiError unless the request may use the admin endpoints: 403 for a
 * foreign Host, Origin or Sec-Fetch-Site, 401 without the admin token (when
 * one is set), 415 for a POST that is not JSON. Same-origin requests (a page
 * served by this server calling its own API) pass.
 */
export function assertAdminRequestAllowed(req: IncomingMessage, settings: AdminGuardSettings): void {
  const configuredHost = settings.host;
  const hostHeader = req.headers.host;
  const hostName = hostHeader === undefined ? undefined : hostNameOf(hostHeader);
  const configured = configuredHost.replace(/^\[|\]$/g, "").toLowerCase();
  if (hostName === undefined || !(isLoopbackHost(hostName) || hostName === configured)) {
    throw forbidden("the Host header must name a loopback address or the configured host");
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${hostHeader!.trim().toLowerCase()}`) {
    throw forbidden("a browser page of another origin may not use the admin endpoints");
  }
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    throw forbidden("a browser page of another site may not use the admin endpoints");
  }
  if (settings.adminToken !== undefined) {
    const given = req.headers["x-admin-token"];
    if (typeof given !== "string" || !secretEquals(given, settings.adminToken)) {
      throw new ApiError(401, "unauthorized", "admin endpoints need the header X-Admin-Token");
    }
  }
  if (req.method === "POST" && !isJsonContentType(req.headers["content-type"])) {
    throw new ApiError(415, "unsupported_media_type", "admin POST requests must be Content-Type: application/json");
  }
}
