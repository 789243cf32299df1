// The dashboard: `GET /__admin/` (and `/__admin/ui`) serves one static page whose
// script and style come from their own routes, so the Content-Security-Policy can
// forbid every inline script and style. The page holds no data: its script reads the
// admin endpoints (same origin, JSON bodies for every change), which keep their own
// checks (admin token, and whatever else guards /__admin/).
import type { IncomingMessage, ServerResponse } from "node:http";
import { DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_JS } from "./dashboard-page.js";
import { ApiError, methodNotAllowed } from "./errors.js";

/** `data:` images only so the page's empty favicon needs no request (one would land in the journal). */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

const page: Asset = { type: "text/html; charset=utf-8", body: Buffer.from(DASHBOARD_HTML) };

// Paths as pathOf gives them: `/__admin/` arrives without its trailing slash.
const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ["/__admin", page],
  ["/__admin/ui", page],
  ["/__admin/ui.js", { type: "text/javascript; charset=utf-8", body: Buffer.from(DASHBOARD_JS) }],
  ["/__admin/ui.css", { type: "text/css; charset=utf-8", body: Buffer.from(DASHBOARD_CSS) }],
]);

export function isDashboardPath(path: string): boolean {
  return ASSETS.has(path);
}

/** The page and its script and style, for GET and HEAD; returns the status sent. */
export function serveDashboard(req: IncomingMessage, res: ServerResponse, path: string): number {
  const asset = ASSETS.get(path);
  if (asset === undefined) throw new ApiError(404, "not_found", `no dashboard file ${path}`);
  if (req.method !== "GET" && req.method !== "HEAD") throw methodNotAllowed(path, ["GET", "HEAD"]);
  res.writeHead(200, {
    "Content-Type": asset.type,
    "Content-Length": String(asset.body.length),
    "Content-Security-Policy": DASHBOARD_CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
  });
  res.end(req.method === "HEAD" ? undefined : asset.body);
  return 200;
}

