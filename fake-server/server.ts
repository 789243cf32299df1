// startFakeServer: wires store, persistence, auth, faults and journal to node:http.
// Each request: `handleRequest` routes it (dashboard, admin, OpenAPI document, or the
// API: api-request.ts, which also lists the order of checks), answers what failed,
// and records it in the journal and the log.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { ADMIN_PREFIX, handleAdmin, type AdminActions } from "./admin.js";
import { refuseUnguardedAdmin } from "./admin-guard.js";
import { handleApiRequest, type ApiContext } from "./api-request.js";
import { isDashboardPath, serveDashboard } from "./dashboard.js";
import { ConnectionAuth, KeyRing, type ApiKeyConfig } from "./auth.js";
import { ConnectionGuard, type ConnectionStats } from "./connections.js";
import { ApiError, errorBody, methodNotAllowed } from "./errors.js";
import { FaultTable, faultRuleSchema, type FaultRule, type FaultRuleInput } from "./faults.js";
import { ClientGone, lingerAfterEarlyAnswer, pathOf, sendError, sendJson } from "./http.js";
import { Journal, isoTime, parseTraceparent, redactString, type JournalEntry, type RawJournalEntry } from "./journal.js";
import { openApiJson } from "./openapi.js";
import { resolveOptions, type FakeServerOptions, type LogSink, type ResolvedOptions } from "./options.js";
import { Persister, loadSnapshot } from "./persistence.js";
import { RateLimiter } from "./rate-limit.js";
import { Store, type StoredGroup, type StoreLimits } from "./store.js";
import { Namespaces, resetNamespace, type NamespaceOptions, type NamespaceState } from "./namespaces.js";
import { parseSeed, readSeedFile, type SeedGroup } from "./seed.js";
import { environmentSchema } from "../provider/wire/schemas.js";
import { z } from "zod";
import { UserGroupsError } from "../provider/wire/errors.js";
import { formatIssues, WORDED_ISSUES } from "../provider/wire/issues.js";

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
  /** Connections open now and at most, and how many were closed idle, evicted at a cap, or refused. */
  connections(): ConnectionStats;
  /** Puts groups in the server's own store (fixed tokens and team ids when given); same as `POST /__admin/seed`. */
  seed(groups: SeedGroup[]): StoredGroup[];
  /**
   * A namespace: fresh API keys whose groups, journal, fault rules and rate-limit windows no
   * other namespace (nor the server's own keys) sees; the same wire behaviour inside. For
   * tests that share one server in parallel. Same as `POST /__admin/namespaces`.
   */
  namespace(options?: NamespaceOptions): FakeServerNamespace;
}

/** One namespace of a fake server (`server.namespace()`): its keys, and the server's in-process helpers scoped to it. */
export interface FakeServerNamespace {
  /** `ns-` and 12 hex digits; the admin API's `/__admin/namespaces/<id>/...`. */
  readonly id: string;
  /** The server's URL (the keys choose the namespace). */
  readonly url: string;
  /** The namespace's keys, by default Customer read-write, Customer read-only, Testing read-write, Testing read-only. */
  readonly apiKeys: ReadonlyArray<Required<ApiKeyConfig>>;
  /** The first key. */
  readonly key: string;
  groups(): StoredGroup[];
  /** The namespace's requests only (redacted). */
  journal(): JournalEntry[];
  clearJournal(): void;
  seed(groups: SeedGroup[]): StoredGroup[];
  setFaults(rules: FaultRuleInput[]): void;
  addFaults(rules: FaultRuleInput[]): void;
  clearFaults(): void;
  faults(): FaultRule[];
  /** No groups, an empty journal, no fault rules, fresh rate-limit windows: in this namespace only. */
  reset(): void;
  /** Ends the namespace: its keys get 401 from now on. Safe to call twice. */
  close(): void;
  [Symbol.dispose](): void;
}

/** @internal The body of `POST /__admin/namespaces`. */
const namespaceRequestSchema = z.strictObject({
  keys: z.array(z.strictObject({ environment: environmentSchema, readOnly: z.boolean().optional() })).optional(),
  seed: z.array(z.unknown()).optional(),
});

const CLOSE_GRACE_MS = 10_000;

/** Everything a running server holds, shared by its request handler and its admin actions. */
interface ServerState extends ApiContext {
  readonly opts: ResolvedOptions;
  readonly keys: KeyRing;
  readonly journal: Journal;
  readonly log: LogSink | undefined;
  readonly inFlight: InFlight;
  readonly connections: ConnectionGuard;
  readonly namespaces: Namespaces;
}

export async function startFakeServer(options: FakeServerOptions): Promise<FakeServer> {
  const opts = resolveOptions(options);
  refuseUnguardedAdmin(opts);
  const keys = new KeyRing(opts.apiKeys);
  const { store, persister } = await openStore(opts.dataFile, opts);
  const seed = [...(opts.seedFile === undefined ? [] : readSeedFile(opts.seedFile)), ...(opts.seed ?? [])];
  if (seed.length > 0) {
    store.seed(seed);
    await persister?.flush();
  }
  const state: ServerState = {
    opts,
    keys,
    connectionAuth: new ConnectionAuth(keys),
    store,
    persister,
    journal: new Journal(opts.journalSize, opts.journalBytes, keys.secrets),
    faults: new FaultTable(),
    limiter: opts.rateLimit === undefined ? undefined : new RateLimiter(opts.rateLimit),
    log: logSinkOf(opts.log),
    inFlight: new InFlight(),
    connections: new ConnectionGuard(opts),
    namespaces: new Namespaces(keys, {
      journalSize: opts.journalSize,
      journalBytes: opts.journalBytes,
      rateLimit: opts.rateLimit,
      maxNamespaces: opts.maxNamespaces,
      storeLimits: { maxGroups: opts.maxGroups, maxGroupBytes: opts.maxGroupBytes, maxTotalBytes: opts.maxTotalBytes },
    }),
  };
  const actions = adminActions(state);
  const server = createHttpServer(opts, state.connections, (req, res) => handleRequest(state, actions, req, res));
  const port = await listen(server, opts.host, opts.port);
  return fakeServerHandle(state, actions, server, port);
}

function logSinkOf(log: ResolvedOptions["log"]): LogSink | undefined {
  return log === true ? (line) => process.stderr.write(`${line}\n`) : typeof log === "function" ? log : undefined;
}

/** The store, loaded from the data file if there is one, which then follows every change. */
async function openStore(dataFile: string | undefined, limits: StoreLimits): Promise<{ store: Store; persister: Persister | undefined }> {
  const store = new Store({ maxGroups: limits.maxGroups, maxGroupBytes: limits.maxGroupBytes, maxTotalBytes: limits.maxTotalBytes });
  if (dataFile === undefined) return { store, persister: undefined };
  const snapshot = await loadSnapshot(dataFile);
  if (snapshot !== undefined) store.load(snapshot);
  const persister = new Persister(dataFile, () => store.snapshot());
  store.onChange = () => persister.markDirty();
  // Fail now, not on the first mutation, if the file cannot be written.
  persister.markDirty();
  await persister.flush();
  return { store, persister };
}

function adminActions(state: ServerState): AdminActions {
  const keyDescriptions = state.opts.apiKeys.map((k) => ({ environment: k.environment, readOnly: k.readOnly === true }));
  return {
    async reset() {
      state.store.reset();
      state.journal.clear();
      state.faults.clear();
      state.limiter?.reset();
      await state.persister?.commit();
    },
    groups: () => state.store.list(),
    journal: () => state.journal.read(),
    clearJournal: () => state.journal.clear(),
    faults: () => state.faults.list(),
    addFaults: (rules) => state.faults.add(rules),
    clearFaults: () => state.faults.clear(),
    rateLimit: () => state.limiter?.state(keyDescriptions) ?? null,
    seed: (groups) => state.store.seed(parseSeed(groups, "seed")),
    namespaces: {
      create: (options) => {
        const parsed = namespaceRequestSchema.safeParse(options, WORDED_ISSUES);
        if (!parsed.success) throw new UserGroupsError("invalid_options", `namespace: ${formatIssues(parsed.error, "the request").join("; ")}`);
        const { keys, seed } = parsed.data;
        const ns = state.namespaces.create({ keys, seed: seed === undefined ? undefined : parseSeed(seed, "namespace seed") });
        return { id: ns.id, apiKeys: ns.apiKeys };
      },
      actions: (id) => {
        const ns = state.namespaces.get(id);
        return ns === undefined ? undefined : namespaceActions(ns);
      },
      remove: (id) => state.namespaces.remove(id),
      ids: () => state.namespaces.ids(),
    },
  };
}

/** The admin actions of one namespace: the same as the server's, on its state. */
function namespaceActions(ns: NamespaceState): AdminActions {
  const keyDescriptions = ns.apiKeys.map((k) => ({ environment: k.environment, readOnly: k.readOnly }));
  return {
    reset: async () => resetNamespace(ns),
    groups: () => ns.store.list(),
    journal: () => ns.journal.read(),
    clearJournal: () => ns.journal.clear(),
    faults: () => ns.faults.list(),
    addFaults: (rules) => ns.faults.add(rules),
    clearFaults: () => ns.faults.clear(),
    rateLimit: () => ns.limiter?.state(keyDescriptions) ?? null,
    seed: (groups) => ns.store.seed(parseSeed(groups, "seed")),
  };
}

/** Routes one request, answers what failed, records it (journal, log) and counts it in flight. */
async function handleRequest(state: ServerState, actions: AdminActions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  state.inFlight.begin();
  const started = performance.now();
  const path = pathOf(req.url);
  const method = req.method ?? "";
  const isAdmin = isAdminPath(path);
  const entry: RawJournalEntry = { startedAt: Date.now(), method, path, status: null, body: null, durationMs: 0 };
  const trace = isAdmin ? undefined : parseTraceparent(req.headers.traceparent);
  if (trace !== undefined) {
    entry.traceparent = trace.traceparent;
    entry.traceId = trace.traceId;
  }
  try {
    await route(state, actions, req, res, path, isAdmin, entry);
  } catch (error) {
    answerFailure(state, req, res, error, entry);
  } finally {
    entry.durationMs = Math.round((performance.now() - started) * 100) / 100;
    // Admin traffic and the OpenAPI document stay out of the journal: it records API calls.
    record(state, entry, !isAdmin && path !== "/openapi.json");
    state.inFlight.end();
  }
}

const isAdminPath = (path: string): boolean => path.startsWith(ADMIN_PREFIX) || isDashboardPath(path);

async function route(
  state: ServerState,
  actions: AdminActions,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  isAdmin: boolean,
  entry: RawJournalEntry,
): Promise<void> {
  if (isDashboardPath(path)) {
    entry.status = serveDashboard(req, res, path);
  } else if (isAdmin) {
    entry.status = await handleAdmin(req, res, path, actions, { host: state.opts.host, adminToken: state.opts.adminToken });
  } else if (path === "/openapi.json") {
    entry.status = serveOpenApi(req, res);
  } else {
    await handleApiRequest(state, req, res, path, entry);
  }
}

let openApiText: string | undefined;

function serveOpenApi(req: IncomingMessage, res: ServerResponse): number {
  if (req.method !== "GET") throw methodNotAllowed("/openapi.json", ["GET"]);
  openApiText ??= openApiJson();
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" });
  res.end(openApiText);
  return 200;
}

/** The W3 error answer for an ApiError, a 500 (always reported) for anything else, nothing when the client is gone. */
function answerFailure(state: ServerState, req: IncomingMessage, res: ServerResponse, error: unknown, entry: RawJournalEntry): void {
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
    const line = `internal error: ${redactString(error instanceof Error ? error.message : String(error), state.keys.secrets)}`;
    if (state.log !== undefined) state.log(line);
    else process.stderr.write(`${line}\n`);
    if (!res.headersSent && !res.destroyed) sendJson(res, 500, errorBody("internal_error", "the fake server failed"));
  }
}

/** Into the journal (API calls only) and the log line of every request. */
function record(state: ServerState, entry: RawJournalEntry, isApiCall: boolean): void {
  // A namespace's requests go to its journal only (none if it closed meanwhile).
  if (isApiCall) (entry.namespace === undefined ? state.journal : state.namespaces.get(entry.namespace)?.journal)?.add(entry);
  state.log?.(
    `${isoTime(entry.startedAt)} ${entry.method} ${redactString(entry.path, state.keys.secrets)} ${entry.status ?? "-"} ${entry.durationMs}ms ${entry.environment ?? "-"}`,
  );
}

/** Counts the requests being handled, so that closing can let them finish. */
class InFlight {
  private count = 0;
  private onIdle: (() => void) | undefined;

  begin(): void {
    this.count += 1;
  }

  end(): void {
    this.count -= 1;
    if (this.count === 0) this.onIdle?.();
  }

  /** Resolves once no request is being handled, or after `graceMs`. */
  async drained(graceMs: number): Promise<void> {
    if (this.count === 0) return;
    await Promise.race([new Promise<void>((resolve) => (this.onIdle = resolve)), sleep(graceMs)]);
  }
}

function createHttpServer(
  opts: ResolvedOptions,
  connections: ConnectionGuard,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Server {
  // Busy from complete headers until the answer is finished or abandoned: meanwhile the idle rule and eviction leave the connection alone.
  const tracked = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    connections.requestStarted(socket);
    res.once("close", () => connections.requestEnded(socket));
    void handle(req, res);
  };
  const server: Server = createServer(
    {
      // Slow or stalled clients (slowloris) are cut off: a 408 once a deadline passes.
      headersTimeout: opts.headersTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      // Between requests, the idle rule of connections.ts; node:http also announces it (Keep-Alive: timeout=N).
      keepAliveTimeout: opts.idleTimeoutMs,
      // Node checks the deadlines on this interval (30 s by default, longer than ours).
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(opts.headersTimeoutMs / 2))),
    },
    tracked,
  );
  // Caps and the idle rule (connections.ts); not server.maxConnections, which refuses
  // the newcomer even when the connections it counts are idle sockets.
  server.on("connection", (socket: Socket) => connections.admit(socket));
  // Answer `Expect: 100-continue` ourselves (readBody sends the 100 when it starts reading).
  server.on("checkContinue", tracked);
  server.on("clientError", answerMalformedRequest);
  return server;
}

/** Malformed HTTP never reaches the handler; still answer with the W3 body when possible. */
function answerMalformedRequest(error: NodeJS.ErrnoException, socket: Socket): void {
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
}

/** Listens and returns the port (the one picked when `port` is 0). */
async function listen(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("fake server: unexpected listen address");
  return address.port;
}

function fakeServerHandle(state: ServerState, actions: AdminActions, server: Server, port: number): FakeServer {
  const { host } = state.opts;
  // The same wording as POST /__admin/faults, for a test that passes a wrong rule in process.
  const validateRules = (rules: FaultRuleInput[]): FaultRule[] =>
    rules.map((rule, index) => {
      const parsed = faultRuleSchema.safeParse(rule, WORDED_ISSUES);
      if (!parsed.success) throw new UserGroupsError("invalid_fault_rule", `fault rule ${index}: ${formatIssues(parsed.error, "the rule").join("; ")}`);
      return parsed.data;
    });
  let closing: Promise<void> | undefined;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    url,
    host,
    port,
    apiKeys: state.opts.apiKeys.map((k) => ({ key: k.key, environment: k.environment, readOnly: k.readOnly === true })),
    close: () => (closing ??= close(state, server)),
    reset: () => actions.reset(),
    groups: actions.groups,
    journal: actions.journal,
    setFaults: (rules) => {
      const parsed = validateRules(rules);
      state.faults.clear();
      state.faults.add(parsed);
    },
    addFaults: (rules) => state.faults.add(validateRules(rules)),
    clearFaults: () => state.faults.clear(),
    faults: actions.faults,
    connections: () => state.connections.stats(),
    seed: (groups) => actions.seed(groups),
    namespace: (options) => namespaceHandle(url, state, state.namespaces.create({ ...options, seed: options?.seed === undefined ? undefined : parseSeed(options.seed, "namespace seed") }), validateRules),
  };
}

function namespaceHandle(url: string, state: ServerState, ns: NamespaceState, validateRules: (rules: FaultRuleInput[]) => FaultRule[]): FakeServerNamespace {
  const actions = namespaceActions(ns);
  const close = (): void => void state.namespaces.remove(ns.id);
  return {
    id: ns.id,
    url,
    apiKeys: ns.apiKeys,
    key: ns.apiKeys[0]!.key,
    groups: actions.groups,
    journal: actions.journal,
    clearJournal: actions.clearJournal,
    seed: (groups) => actions.seed(groups),
    setFaults: (rules) => {
      const parsed = validateRules(rules);
      ns.faults.clear();
      ns.faults.add(parsed);
    },
    addFaults: (rules) => ns.faults.add(validateRules(rules)),
    clearFaults: actions.clearFaults,
    faults: actions.faults,
    reset: () => resetNamespace(ns),
    close,
    [Symbol.dispose]: close,
  };
}

/** Stops accepting, lets in-flight requests finish (up to a grace time), flushes the data file. */
async function close(state: ServerState, server: Server): Promise<void> {
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await state.inFlight.drained(CLOSE_GRACE_MS);
  server.closeAllConnections();
  await serverClosed;
  await state.persister?.flush();
}
