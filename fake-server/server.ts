// startFakeServer: wires store, persistence, auth, faults and journal to node:http.
//
// Order of checks for /api/user (the first failing one answers):
//   404 path -> 405 method -> 401 key -> 429 rate -> 403 read-only write ->
//   415 media type -> 413 size -> 400 JSON object -> fault rules -> 400 fields ->
//   the operation (403 read-only create, 404 unknown id/token, 409 id mismatch).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { API_PATH, type ApiMethod } from "../provider/wire/schemas.js";
import { ADMIN_PREFIX, handleAdmin, type AdminActions } from "./admin.js";
import { isDashboardPath, serveDashboard } from "./dashboard.js";
import { ConnectionAuth, KeyRing, type ApiKey, type ApiKeyConfig } from "./auth.js";
import { ApiError, errorBody } from "./errors.js";
import { FaultTable, faultRuleSchema, type FaultRule, type FaultRuleInput } from "./faults.js";
import { assertMayCall, parseBody, runOperation, subjectId, type JsonObject, type SuccessBody } from "./handlers.js";
import {
  ClientGone,
  isJsonContentType,
  lingerAfterEarlyAnswer,
  pathOf,
  readBody,
  sendError,
  sendJson,
} from "./http.js";
import { Journal, isoTime, redactString, type JournalEntry, type RawJournalEntry } from "./journal.js";
import { buildOpenApiDocument } from "./openapi.js";
import { isLoopbackHost, resolveOptions, type FakeServerOptions, type LogSink } from "./options.js";
import { Persister, loadSnapshot } from "./persistence.js";
import { RateLimiter } from "./rate-limit.js";
import { Store, type StoredGroup } from "./store.js";

export interface FakeServer {
  /** `http://HOST:PORT`, no trailing slash. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** The configured keys (tests use them to call the API). */
  readonly apiKeys: ReadonlyArray<Required<ApiKeyConfig>>;
  /** Stops accepting, lets in-flight requests finish, flushes the data file. Safe to call twice. */
  close(): Promise<void>;
  /** Same as `POST /__admin/reset`: no groups, empty journal, no fault rules, fresh rate-limit windows. */
  reset(): Promise<void>;
  /** Same as `GET /__admin/groups`. */
  groups(): StoredGroup[];
  /** Same as `GET /__admin/requests` (redacted). */
  journal(): JournalEntry[];
  /** Replaces every fault rule. */
  setFaults(rules: FaultRuleInput[]): void;
  /** Same as `POST /__admin/faults`: appends rules. */
  addFaults(rules: FaultRuleInput[]): void;
  /** Same as `DELETE /__admin/faults`. */
  clearFaults(): void;
  /** The active rules, with how many times each may still fire. */
  faults(): FaultRule[];
}

const ALLOW = "GET, POST, PUT, DELETE";
const CLOSE_GRACE_MS = 10_000;

function isApiMethod(method: string | undefined): method is ApiMethod {
  return method === "GET" || method === "POST" || method === "PUT" || method === "DELETE";
}

function hardReset(socket: Socket): void {
  // A real RST is what a client sees when a connection is "reset by peer".
  if (typeof socket.resetAndDestroy === "function" && !socket.destroyed) socket.resetAndDestroy();
  else socket.destroy();
}

export async function startFakeServer(options: FakeServerOptions): Promise<FakeServer> {
  const opts = resolveOptions(options);
  if (!isLoopbackHost(opts.host) && opts.adminToken === undefined) {
    throw new Error(
      `refusing to listen on non-loopback host ${opts.host} without an admin token: ` +
        "the /__admin/ endpoints would be open to the network (set adminToken / --admin-token)",
    );
  }
  const keys = new KeyRing(opts.apiKeys);
  const connectionAuth = new ConnectionAuth(keys);
  const store = new Store();
  const journal = new Journal(opts.journalSize, opts.journalBytes, keys.secrets);
  const faults = new FaultTable();
  const limiter = opts.rateLimit === undefined ? undefined : new RateLimiter(opts.rateLimit);
  const log: LogSink | undefined =
    opts.log === true ? (line) => process.stderr.write(`${line}\n`) : typeof opts.log === "function" ? opts.log : undefined;

  let persister: Persister | undefined;
  if (opts.dataFile !== undefined) {
    const snapshot = await loadSnapshot(opts.dataFile);
    if (snapshot !== undefined) store.load(snapshot);
    const p = new Persister(opts.dataFile, () => store.snapshot());
    store.onChange = () => p.markDirty();
    persister = p;
    // Fail now, not on the first mutation, if the file cannot be written.
    p.markDirty();
    await p.flush();
  }

  const keyDescriptions = opts.apiKeys.map((k) => ({ environment: k.environment, readOnly: k.readOnly === true }));
  let openApiText: string | undefined;
  const validateRules = (rules: FaultRuleInput[]): FaultRule[] => rules.map((r) => faultRuleSchema.parse(r));

  const actions: AdminActions = {
    async reset() {
      store.reset();
      journal.clear();
      faults.clear();
      limiter?.reset();
      await persister?.commit();
    },
    groups: () => store.list(),
    journal: () => journal.read(),
    clearJournal: () => journal.clear(),
    faults: () => faults.list(),
    addFaults: (rules) => faults.add(rules),
    clearFaults: () => faults.clear(),
    rateLimit: () => limiter?.state(keyDescriptions) ?? null,
  };

  async function handleApi(req: IncomingMessage, res: ServerResponse, path: string, entry: RawJournalEntry): Promise<void> {
    if (path !== API_PATH) throw new ApiError(404, "not_found", `no such path; the API is at ${API_PATH}`);
    const method = req.method;
    if (!isApiMethod(method)) {
      throw new ApiError(405, "method_not_allowed", `${API_PATH} accepts ${ALLOW}`, { Allow: ALLOW });
    }
    const auth = connectionAuth.authenticate(req.socket, req.headers.authorization);
    if (!auth.ok) {
      if (auth.presented !== undefined) entry.presentedKey = auth.presented;
      const why = auth.reason === "missing" ? "is missing" : auth.reason === "malformed" ? "must be `Token <API_KEY>`" : "holds an unknown API key";
      throw new ApiError(401, "unauthorized", `the Authorization header ${why}`, { "WWW-Authenticate": "Token" });
    }
    const key: ApiKey = auth.key;
    entry.environment = key.environment;
    if (limiter !== undefined) {
      const decision = limiter.take(key.id);
      if (!decision.ok) {
        throw new ApiError(429, "rate_limited", "too many requests for this API key; retry later", {
          "Retry-After": String(decision.retryAfterSeconds),
        });
      }
    }
    assertMayCall(key, method);
    if (!isJsonContentType(req.headers["content-type"])) {
      throw new ApiError(415, "unsupported_media_type", "Content-Type must be application/json");
    }
    const body: JsonObject = parseBody(await readBody(req, res));
    entry.body = body;

    const fault = faults.empty ? undefined : faults.pick({ method, userGroupId: subjectId(method, store, key, body) });
    if (fault !== undefined) entry.fault = fault.action;
    switch (fault?.action) {
      case "status":
        throw new ApiError(
          fault.status,
          "injected_fault",
          `fault injected by a fake-server rule (status ${fault.status})`,
          fault.retryAfter === undefined ? {} : { "Retry-After": String(fault.retryAfter) },
        );
      case "delay":
        await sleep(fault.delayMs);
        break;
      case "reset":
        hardReset(req.socket);
        throw new ClientGone();
      default:
        break;
    }

    let result: SuccessBody;
    try {
      const before = store.version;
      result = runOperation(method, store, key, body);
      // Group commit: answer a mutation only once it is on disk (see persistence.ts).
      if (persister !== undefined && store.version !== before) await persister.commit();
    } finally {
      // The lost-response case: whatever the outcome, the client never hears it.
      if (fault?.action === "drop-after-apply") req.socket.destroy();
    }
    if (fault?.action === "drop-after-apply") throw new ClientGone();
    sendJson(res, 200, result);
    entry.status = 200;
  }

  let inFlight = 0;
  let idle: (() => void) | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    inFlight += 1;
    const started = performance.now();
    const path = pathOf(req.url);
    const method = req.method ?? "";
    const isAdmin = path.startsWith(ADMIN_PREFIX) || isDashboardPath(path);
    const entry: RawJournalEntry = { startedAt: Date.now(), method, path, status: null, body: null, durationMs: 0 };
    try {
      if (isDashboardPath(path)) {
        entry.status = serveDashboard(req, res, path);
      } else if (isAdmin) {
        entry.status = await handleAdmin(req, res, path, actions, { host: opts.host, adminToken: opts.adminToken });
      } else if (path === "/openapi.json") {
        if (method !== "GET") throw new ApiError(405, "method_not_allowed", "/openapi.json accepts GET", { Allow: "GET" });
        openApiText ??= JSON.stringify(buildOpenApiDocument(), null, 2);
        res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" });
        res.end(openApiText);
        entry.status = 200;
      } else {
        await handleApi(req, res, path, entry);
      }
    } catch (error) {
      if (error instanceof ClientGone || req.socket.destroyed) {
        // Nobody to answer (client gone, or a reset / drop-after-apply fault).
        entry.status = null;
      } else if (error instanceof ApiError) {
        entry.status = error.status;
        entry.code = error.code;
        if (!res.headersSent && !res.destroyed) {
          if (error.headers.Connection === "close") lingerAfterEarlyAnswer(req);
          sendError(res, error);
        }
      } else {
        entry.status = 500;
        entry.code = "internal_error";
        // Always reported: a 500 from the fake server is a bug or a disk problem worth seeing.
        const line = `internal error: ${redactString(error instanceof Error ? error.message : String(error), keys.secrets)}`;
        if (log !== undefined) log(line);
        else process.stderr.write(`${line}\n`);
        if (!res.headersSent && !res.destroyed) sendJson(res, 500, errorBody("internal_error", "the fake server failed"));
      }
    } finally {
      entry.durationMs = Math.round((performance.now() - started) * 100) / 100;
      // Admin traffic and the OpenAPI document stay out of the journal: it records API calls.
      if (!isAdmin && path !== "/openapi.json") journal.add(entry);
      log?.(
        `${isoTime(entry.startedAt)} ${method} ${redactString(path, keys.secrets)} ${entry.status ?? "-"} ${entry.durationMs}ms ${entry.environment ?? "-"}`,
      );
      inFlight -= 1;
      if (inFlight === 0) idle?.();
    }
  }

  const server: Server = createServer(
    {
      // Slow or stalled clients (slowloris) are cut off: a 408 once a deadline passes.
      headersTimeout: opts.headersTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      // Node checks the deadlines on this interval (30 s by default, longer than ours).
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(opts.headersTimeoutMs / 2))),
    },
    (req, res) => {
      void handle(req, res);
    },
  );
  // Past this, new connections are closed at once: each open one may buffer a body of up to 1 MiB.
  server.maxConnections = opts.maxConnections;
  // Answer `Expect: 100-continue` ourselves (readBody sends the 100 when it starts reading).
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res);
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    // Malformed HTTP never reaches `handle`; still answer with the W3 body when possible.
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
    const text = JSON.stringify(errorBody("bad_request", "malformed HTTP request"));
    socket.end(
      `HTTP/1.1 ${status} Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("fake server: unexpected listen address");
  const host = opts.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (inFlight > 0) {
      await Promise.race([new Promise<void>((resolve) => (idle = resolve)), sleep(CLOSE_GRACE_MS)]);
    }
    server.closeAllConnections();
    await serverClosed;
    await persister?.flush();
  }

  return {
    url,
    host,
    port: address.port,
    apiKeys: opts.apiKeys.map((k) => ({ key: k.key, environment: k.environment, readOnly: k.readOnly === true })),
    close: () => (closing ??= close()),
    reset: () => actions.reset(),
    groups: actions.groups,
    journal: actions.journal,
    setFaults: (rules) => {
      const parsed = validateRules(rules);
      faults.clear();
      faults.add(parsed);
    },
    addFaults: (rules) => faults.add(validateRules(rules)),
    clearFaults: () => faults.clear(),
    faults: actions.faults,
  };
}
