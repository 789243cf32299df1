// The /__admin/ endpoints: inspect and steer the fake server from tests and demos.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ADMIN_MAX_BODY_BYTES, assertAdminRequestAllowed, type AdminGuardSettings } from "./admin-guard.js";
import { formatIssues, WORDED_ISSUES } from "../provider/wire/issues.js";
import { ApiError, methodNotAllowed } from "./errors.js";
import { faultRulesBodySchema, type FaultRule } from "./faults.js";
import { parseBody } from "./handlers.js";
import { readBody, sendJson } from "./http.js";
import type { JournalEntry } from "./journal.js";
import type { RateLimitState } from "./rate-limit.js";
import type { StoredGroup } from "./store.js";
import { MAX_BODY_BYTES } from "../provider/wire/schemas.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import { NAMESPACE_ID } from "./namespaces.js";

export const ADMIN_PREFIX = "/__admin/";

/** What the admin endpoints act on; the same functions back the in-process helpers. */
export interface AdminActions {
  reset(): Promise<void>;
  groups(): StoredGroup[];
  journal(): JournalEntry[];
  clearJournal(): void;
  faults(): FaultRule[];
  addFaults(rules: FaultRule[]): void;
  clearFaults(): void;
  /** null when no rate limit is configured. */
  rateLimit(): RateLimitState | null;
  /** Checks the seed (seed.ts) and stores it; returns the groups stored. */
  seed(groups: unknown): StoredGroup[];
  /** The server's namespaces (namespaces.ts); absent inside a namespace. */
  readonly namespaces?: NamespaceAdmin;
}

/** The namespaces as the admin API manages them. */
export interface NamespaceAdmin {
  /** Checks `options` (keys, seed) and makes a namespace. */
  create(options: unknown): { id: string; apiKeys: ReadonlyArray<{ key: string; environment: string; readOnly: boolean }> };
  actions(id: string): AdminActions | undefined;
  remove(id: string): boolean;
  ids(): string[];
}

type AdminRoute = (req: IncomingMessage, actions: AdminActions, res: ServerResponse) => Promise<object>;

const ROUTES: Record<string, Record<string, AdminRoute>> = {
  reset: {
    POST: async (_req, a) => {
      await a.reset();
      return {};
    },
  },
  groups: { GET: async (_req, a) => ({ groups: a.groups() }) },
  requests: {
    GET: async (_req, a) => ({ requests: a.journal() }),
    DELETE: async (_req, a) => {
      a.clearJournal();
      return {};
    },
  },
  faults: {
    GET: async (_req, a) => ({ rules: a.faults() }),
    POST: async (req, a, res) => {
      const body = parseBody(await readBody(req, res, ADMIN_MAX_BODY_BYTES));
      const parsed = faultRulesBodySchema.safeParse(body, WORDED_ISSUES);
      if (!parsed.success) throw new ApiError(400, "invalid_body", `fault rules: ${formatIssues(parsed.error, "request body").join("; ")}`);
      a.addFaults(parsed.data.rules);
      return { rules: a.faults() };
    },
    DELETE: async (_req, a) => {
      a.clearFaults();
      return {};
    },
  },
  "rate-limit": { GET: async (_req, a) => ({ rateLimit: a.rateLimit() }) },
  seed: {
    POST: async (req, a, res) => {
      const body = parseBody(await readBody(req, res, MAX_BODY_BYTES));
      return { groups: refusedAs400(() => a.seed(body["groups"])) };
    },
  },
};

/** `/__admin/namespaces` itself (the list, and making one). */
const NAMESPACE_ROUTES: Record<string, (req: IncomingMessage, namespaces: NamespaceAdmin, res: ServerResponse) => Promise<object>> = {
  GET: async (_req, n) => ({ namespaces: n.ids() }),
  POST: async (req, n, res) => {
    const raw = await readBody(req, res, MAX_BODY_BYTES);
    const body = raw.length === 0 ? {} : parseBody(raw);
    return { namespace: refusedAs400(() => n.create(body)) };
  },
};

/** A UserGroupsError of a bad seed or namespace request (or one past the namespaces' cap) answers 400. */
function refusedAs400<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof UserGroupsError) {
      throw new ApiError(400, "invalid_body", error.message);
    }
    throw error;
  }
}

/** Answers one admin request; returns the status sent. Throws ApiError for failures. */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  actions: AdminActions,
  guard: AdminGuardSettings,
): Promise<number> {
  assertAdminRequestAllowed(req, guard);
  let name = path.slice(ADMIN_PREFIX.length);
  const method = req.method ?? "";
  if ((name === "namespaces" || name.startsWith("namespaces/")) && actions.namespaces !== undefined) {
    const [, id, rest] = /^namespaces(?:\/([^/]*)(?:\/(.*))?)?$/.exec(name) ?? [];
    if (id === undefined) {
      const handler = Object.hasOwn(NAMESPACE_ROUTES, method) ? NAMESPACE_ROUTES[method] : undefined;
      if (handler === undefined) throw methodNotAllowed(path, Object.keys(NAMESPACE_ROUTES));
      sendJson(res, 200, { success: 1, ...(await handler(req, actions.namespaces, res)) });
      return 200;
    }
    const scoped = NAMESPACE_ID.test(id) ? actions.namespaces.actions(id) : undefined;
    if (scoped === undefined) throw new ApiError(404, "not_found", "no such namespace (closed, or never made)");
    if (rest === undefined) {
      if (method !== "DELETE") throw methodNotAllowed(path, ["DELETE"]);
      actions.namespaces.remove(id);
      sendJson(res, 200, { success: 1 });
      return 200;
    }
    actions = scoped;
    name = rest;
  }
  const route = Object.hasOwn(ROUTES, name) ? ROUTES[name] : undefined;
  if (route === undefined) throw new ApiError(404, "not_found", `no admin endpoint ${path}`);
  const handler = Object.hasOwn(route, method) ? route[method] : undefined;
  if (handler === undefined) {
    throw methodNotAllowed(path, Object.keys(route));
  }
  const result = await handler(req, actions, res);
  sendJson(res, 200, { success: 1, ...result });
  return 200;
}
