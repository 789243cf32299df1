// One request to /api/user, as the steps it goes through in order (the first
// failing one answers):
//   404 path -> 405 method -> 401 key -> 429 rate -> 403 read-only write ->
//   415 media type -> 413 size -> 400 JSON object -> fault rules -> 400 fields ->
//   the operation (403 read-only create, 404 unknown id/token, 409 id mismatch).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { API_PATH, MAX_ID_CHARS, type ApiMethod } from "../provider/wire/schemas.js";
import type { ApiKey, ConnectionAuth } from "./auth.js";
import { ApiError, methodNotAllowed } from "./errors.js";
import type { FaultRule, FaultTable } from "./faults.js";
import { REQUEST_FIELDS, assertMayCall, parseBody, runOperation, subjectId, type JsonObject, type SuccessBody } from "./handlers.js";
import { ClientGone, isJsonContentType, readBody, sendJson } from "./http.js";
import type { RawJournalEntry } from "./journal.js";
import type { Persister } from "./persistence.js";
import type { Namespaces } from "./namespaces.js";
import type { RateLimiter } from "./rate-limit.js";
import type { Store } from "./store.js";

/** The state an API request works on: the server's own, or a namespace's (namespaces.ts). */
export interface ApiScope {
  readonly store: Store;
  readonly faults: FaultTable;
  readonly limiter: RateLimiter | undefined;
  readonly persister: Persister | undefined;
}

/** What an API request needs from the running server. */
export interface ApiContext extends ApiScope {
  readonly connectionAuth: ConnectionAuth;
  readonly namespaces: Namespaces;
  readonly store: Store;
  readonly faults: FaultTable;
  readonly limiter: RateLimiter | undefined;
  readonly persister: Persister | undefined;
}

/** The methods of /api/user, as its 405 answers list them in `Allow`. */
export const ALLOW = ["GET", "POST", "PUT", "DELETE"] as const;

/** Handles one API request; fills `entry` (the journal's record of it) as it learns things. */
export async function handleApiRequest(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, path: string, entry: RawJournalEntry): Promise<void> {
  const method = routedMethod(path, req.method);
  const key = authenticate(ctx.connectionAuth, req, entry);
  const scope = scopeOf(ctx, key);
  if (key.namespace !== undefined) entry.namespace = key.namespace;
  admitUnderRateLimit(scope.limiter, key);
  assertMayCall(key, method);
  const body = await readJsonObject(req, res, method);
  entry.body = body;
  const subject = subjectId(method, scope.store, key, body);
  if (subject !== undefined && subject.length <= MAX_ID_CHARS) entry.userGroupId = subject;
  const fault = await applyFault(scope, req, method, key, body, entry);
  const result = await carryOut(scope, req, method, key, body, fault?.action === "drop-after-apply");
  sendJson(res, 200, result);
  entry.status = 200;
}

/** The namespace's state for a namespace's key (401 if it closed meanwhile), else the server's own. */
function scopeOf(ctx: ApiContext, key: ApiKey): ApiScope {
  if (key.namespace === undefined) return ctx;
  const scope = ctx.namespaces.get(key.namespace);
  if (scope === undefined) throw new ApiError(401, "unauthorized", "the Authorization header holds an unknown API key", { "WWW-Authenticate": "Token" });
  return scope;
}

/** 404 for another path, 405 for another method. */
function routedMethod(path: string, method: string | undefined): ApiMethod {
  if (path !== API_PATH) throw new ApiError(404, "not_found", `no such path; the API is at ${API_PATH}`);
  if (!isApiMethod(method)) throw methodNotAllowed(API_PATH, ALLOW);
  return method;
}

function isApiMethod(method: string | undefined): method is ApiMethod {
  return method === "GET" || method === "POST" || method === "PUT" || method === "DELETE";
}

/** The request's API key, or 401 (the journal keeps what was presented, redacted later). */
function authenticate(connectionAuth: ConnectionAuth, req: IncomingMessage, entry: RawJournalEntry): ApiKey {
  const auth = connectionAuth.authenticate(req.socket, req.headers.authorization);
  if (!auth.ok) {
    if (auth.presented !== undefined) entry.presentedKey = auth.presented;
    const why = auth.reason === "missing" ? "is missing" : auth.reason === "malformed" ? "must be `Token <API_KEY>`" : "holds an unknown API key";
    throw new ApiError(401, "unauthorized", `the Authorization header ${why}`, { "WWW-Authenticate": "Token" });
  }
  entry.environment = auth.key.environment;
  return auth.key;
}

function admitUnderRateLimit(limiter: RateLimiter | undefined, key: ApiKey): void {
  if (limiter === undefined) return;
  const decision = limiter.take(key.id);
  if (!decision.ok) {
    throw new ApiError(429, "rate_limited", "too many requests for this API key; retry later", {
      "Retry-After": String(decision.retryAfterSeconds),
    });
  }
}

/** 415 unless JSON; then the body, bounded (413) and a JSON object (400). */
async function readJsonObject(req: IncomingMessage, res: ServerResponse, method: ApiMethod): Promise<JsonObject> {
  if (!isJsonContentType(req.headers["content-type"])) {
    throw new ApiError(415, "unsupported_media_type", "Content-Type must be application/json");
  }
  return parseBody(await readBody(req, res), REQUEST_FIELDS[method]);
}

/**
 * The fault rule that fires for this request, if any, applied: a status or a
 * reset ends the request here, a delay waits; drop-after-apply is returned for
 * `carryOut`.
 */
async function applyFault(
  ctx: ApiScope,
  req: IncomingMessage,
  method: ApiMethod,
  key: ApiKey,
  body: JsonObject,
  entry: RawJournalEntry,
): Promise<FaultRule | undefined> {
  if (ctx.faults.empty) return undefined; // the common case: no rule, no subject lookup
  const fault = ctx.faults.pick({ method, userGroupId: subjectId(method, ctx.store, key, body) });
  if (fault === undefined) return undefined;
  entry.fault = fault.action;
  switch (fault.action) {
    case "status":
      throw new ApiError(
        fault.status,
        "injected_fault",
        `fault injected by a fake-server rule (status ${fault.status})`,
        fault.retryAfter === undefined ? {} : { "Retry-After": String(fault.retryAfter) },
      );
    case "delay":
      await sleep(fault.delayMs);
      return fault;
    case "reset":
      hardReset(req.socket);
      throw new ClientGone();
    default:
      return fault;
  }
}

/** A real RST is what a client sees when a connection is "reset by peer". */
function hardReset(socket: Socket): void {
  if (typeof socket.resetAndDestroy === "function" && !socket.destroyed) socket.resetAndDestroy();
  else socket.destroy();
}

/**
 * Runs the operation; a mutation is answered only once it is on disk (group
 * commit, see persistence.ts). With `dropAnswer` (the lost-response case) the
 * client never hears the outcome, whatever it is.
 */
async function carryOut(ctx: ApiScope, req: IncomingMessage, method: ApiMethod, key: ApiKey, body: JsonObject, dropAnswer: boolean): Promise<SuccessBody> {
  let result: SuccessBody;
  try {
    const before = ctx.store.version;
    result = runOperation(method, ctx.store, key, body);
    if (ctx.persister !== undefined && ctx.store.version !== before) await ctx.persister.commit();
  } finally {
    if (dropAnswer) req.socket.destroy();
  }
  if (dropAnswer) throw new ClientGone();
  return result;
}
