// The emulator a user's tests run against: started in process, or one already
// running elsewhere reused through its base URL (its admin API). Either way each
// stack works in a namespace of its own (fake-server/namespaces.ts), so tests can
// share one emulator in parallel.
import { request } from "undici";
import {
  startFakeServer,
  type ApiKeyConfig,
  type Environment,
  type FakeServer,
  type FakeServerOptions,
  type FaultRuleInput,
  type JournalEntry,
  type SeedGroup,
  type StoredGroup,
} from "../fake-server/index.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import { expectRequests, findRequests, type RequestCount, type RequestQuery } from "./requests.js";

/** The environment variable naming an emulator to reuse (its base URL) instead of starting one. */
export const EMULATOR_URL_ENV = "USER_GROUPS_EMULATOR_URL";
/** The admin token of that emulator, when it asks for one. */
export const EMULATOR_ADMIN_TOKEN_ENV = "USER_GROUPS_EMULATOR_ADMIN_TOKEN";

/** What a namespace is made with. */
export interface TestNamespaceOptions {
  /** The keys to make (default: Customer and Testing, each read-write and read-only; the first is `key`). */
  readonly keys?: ReadonlyArray<{ environment: Environment; readOnly?: boolean }>;
  /** Groups in the namespace from the start (fixed tokens and team ids when given). */
  readonly seed?: SeedGroup[];
}

/** One test's share of an emulator: its keys, and what it can see and steer there. */
export interface TestNamespace {
  readonly id: string;
  /** The emulator's base URL. */
  readonly url: string;
  /** The first key (Customer read-write by default). */
  readonly key: string;
  readonly apiKeys: ReadonlyArray<Required<ApiKeyConfig>>;
  /** The namespace's groups, as the emulator stores them (tokens included: handle with care). */
  groups(): Promise<StoredGroup[]>;
  /** The namespace's requests (redacted), oldest first; with a query, those that match. */
  requests(query?: RequestQuery): Promise<JournalEntry[]>;
  /** Asserts on the requests (see expectRequests); the message never shows a token or key. */
  expectRequests(query: RequestQuery, count?: RequestCount): Promise<JournalEntry[]>;
  seed(groups: SeedGroup[]): Promise<StoredGroup[]>;
  /** Replaces the namespace's fault rules. */
  setFaults(rules: FaultRuleInput[]): Promise<void>;
  clearFaults(): Promise<void>;
  /** No groups, an empty journal, no fault rules, fresh rate windows: in this namespace. */
  reset(): Promise<void>;
  /** Ends the namespace (its keys get 401). Safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** An emulator for tests: one per run or per file, shared by many namespaces. */
export interface TestEmulator {
  readonly url: string;
  /** Whether this process started it (and `close()` stops it) or reuses one through its URL. */
  readonly owned: boolean;
  /**
   * The emulator itself when it runs in this process (emulatorOf, or startEmulator without a URL):
   * its own keys, every group it holds, its journal and options; undefined when reused through its URL.
   */
  readonly server: FakeServer | undefined;
  namespace(options?: TestNamespaceOptions): Promise<TestNamespace>;
  /** Stops the emulator if this process started it. Safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface StartEmulatorOptions {
  /** Reuse the emulator at this base URL (default: USER_GROUPS_EMULATOR_URL, else start one in process). */
  readonly baseUrl?: string;
  /** false: start one in this process even when USER_GROUPS_EMULATOR_URL is set (a test that needs `server`). Default true. */
  readonly reuse?: boolean;
  /** Its admin token (default USER_GROUPS_EMULATOR_ADMIN_TOKEN); needed off loopback. */
  readonly adminToken?: string;
  /** Options of the emulator started in process (a rate limit, seeded groups of its own keys, a journal size). */
  readonly server?: Omit<FakeServerOptions, "apiKeys"> & { apiKeys?: ApiKeyConfig[] };
}

/** An emulator: the one at `baseUrl` (or USER_GROUPS_EMULATOR_URL), else a new one in this process. */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<TestEmulator> {
  const baseUrl = options.baseUrl ?? (options.reuse === false ? undefined : nonEmpty(process.env[EMULATOR_URL_ENV]));
  if (baseUrl !== undefined) return remoteEmulator(baseUrl, options.adminToken ?? nonEmpty(process.env[EMULATOR_ADMIN_TOKEN_ENV]));
  const { apiKeys, ...rest } = options.server ?? {};
  // The emulator's own key is never handed out: every test works in a namespace.
  const server = await startFakeServer({ ...rest, apiKeys: apiKeys ?? [{ key: `own-${process.pid}-${Date.now()}`, environment: "Customer" }] });
  return inProcessEmulator(server, true);
}

/** An emulator over a FakeServer already started in this process (its close() is the caller's). */
export function emulatorOf(server: FakeServer): TestEmulator {
  return inProcessEmulator(server, false);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function inProcessEmulator(server: FakeServer, owned: boolean): TestEmulator {
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= owned ? server.close() : Promise.resolve());
  return {
    url: server.url,
    owned,
    server,
    namespace: async (options = {}) => {
      const ns = server.namespace({ keys: options.keys, seed: options.seed });
      const secrets = ns.apiKeys.map((k) => k.key);
      const closeNs = async (): Promise<void> => ns.close();
      return {
        id: ns.id,
        url: ns.url,
        key: ns.key,
        apiKeys: ns.apiKeys,
        groups: async () => ns.groups(),
        requests: async (query) => (query === undefined ? ns.journal() : findRequests(ns.journal(), query)),
        expectRequests: async (query, count) => expectRequests(ns.journal(), query, count, secrets),
        seed: async (groups) => ns.seed(groups),
        setFaults: async (rules) => ns.setFaults(rules),
        clearFaults: async () => ns.clearFaults(),
        reset: async () => ns.reset(),
        close: closeNs,
        [Symbol.asyncDispose]: closeNs,
      };
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** The emulator at `baseUrl`, through its admin API (`/__admin/namespaces`). */
function remoteEmulator(baseUrl: string, adminToken: string | undefined): TestEmulator {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UserGroupsError("test_stack_failed", `the emulator's base URL is not a URL (${EMULATOR_URL_ENV} or baseUrl)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UserGroupsError("test_stack_failed", "the emulator's base URL must be http(s)");
  const base = url.origin;
  const admin = async <T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> => {
    const res = await request(`${base}/__admin/${path}`, {
      method,
      headers: { "content-type": "application/json", ...(adminToken === undefined ? {} : { "x-admin-token": adminToken }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      let message = text.slice(0, 500);
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
      } catch {
        // not JSON: the text as it came, cut
      }
      throw new UserGroupsError("test_stack_failed", `emulator admin ${method} /__admin/${path}: ${res.statusCode} ${message}`);
    }
    return JSON.parse(text) as T;
  };
  return {
    url: base,
    owned: false,
    server: undefined,
    namespace: async (options = {}) => {
      const made = await admin<{ namespace: { id: string; apiKeys: Array<Required<ApiKeyConfig>> } }>("POST", "namespaces", {
        ...(options.keys === undefined ? {} : { keys: options.keys }),
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      });
      const { id, apiKeys } = made.namespace;
      const secrets = apiKeys.map((k) => k.key);
      const journal = async (): Promise<JournalEntry[]> => (await admin<{ requests: JournalEntry[] }>("GET", `namespaces/${id}/requests`)).requests;
      let closing: Promise<void> | undefined;
      const close = (): Promise<void> => (closing ??= admin("DELETE", `namespaces/${id}`).then(() => undefined));
      return {
        id,
        url: base,
        key: apiKeys[0]!.key,
        apiKeys,
        groups: async () => (await admin<{ groups: StoredGroup[] }>("GET", `namespaces/${id}/groups`)).groups,
        requests: async (query) => (query === undefined ? journal() : findRequests(await journal(), query)),
        expectRequests: async (query, count) => expectRequests(await journal(), query, count, secrets),
        seed: async (groups) => (await admin<{ groups: StoredGroup[] }>("POST", `namespaces/${id}/seed`, { groups })).groups,
        setFaults: async (rules) => {
          await admin("DELETE", `namespaces/${id}/faults`);
          await admin("POST", `namespaces/${id}/faults`, { rules });
        },
        clearFaults: async () => void (await admin("DELETE", `namespaces/${id}/faults`)),
        reset: async () => void (await admin("POST", `namespaces/${id}/reset`)),
        close,
        [Symbol.asyncDispose]: close,
      };
    },
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  };
}
