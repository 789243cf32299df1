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
};

/** Answers one admin request; returns the status sent. Throws ApiError for failures. */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  actions: AdminActions,
  guard: AdminGuardSettings,
): Promise<number> {
  assertAdminRequestAllowed(req, guard);
  const name = path.slice(ADMIN_PREFIX.length);
  const route = Object.hasOwn(ROUTES, name) ? ROUTES[name] : undefined;
  if (route === undefined) throw new ApiError(404, "not_found", `no admin endpoint ${path}`);
  const method = req.method ?? "";
  const handler = Object.hasOwn(route, method) ? route[method] : undefined;
  if (handler === undefined) {
    throw methodNotAllowed(path, Object.keys(route));
  }
  const result = await handler(req, actions, res);
  sendJson(res, 200, { success: 1, ...result });
  return 200;
}
