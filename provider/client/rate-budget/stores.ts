// Which rate budget a provider process uses, from its environment: the limit
// (USER_GROUPS_RATE_LIMIT, the user's) and where the budget is shared
// (USER_GROUPS_RATE_BUDGET and USER_GROUPS_RATE_BUDGET_TABLE, which the
// automation layer sets from the stack's backend: automation/rate-budget-env.ts).
import path from "node:path";
import { FileSlotStore } from "./file-store";
import { PostgresSlotStore } from "./postgres-store";
import { budgetIdOf, InProcessSlotStore, PacedRateBudget, parseRateLimit, type RateBudget, type SlotStore, slotIntervalMs } from "./budget";
import { UserGroupsError } from "../../wire/errors";

export const RATE_BUDGET_ENV = {
  /** The key's allowance, REQUESTS/SECONDS (default 180/60), or `off`. */
  limit: "USER_GROUPS_RATE_LIMIT",
  /** Where the budget is shared: `postgres://…` (no password: PGPASSWORD) or `file:///abs/dir`; unset: this process alone. */
  store: "USER_GROUPS_RATE_BUDGET",
  /** The PostgreSQL table of the budget (default user_groups_rate_budget). */
  table: "USER_GROUPS_RATE_BUDGET_TABLE",
} as const;

export class InvalidRateBudgetStoreError extends UserGroupsError {
  constructor() {
    super("invalid_rate_budget_store", `${RATE_BUDGET_ENV.store} must be a postgres:// URL or a file:// URL of an absolute directory`);
    this.name = "InvalidRateBudgetStoreError";
  }
}

/** The store a budget location names (checked before anything is opened). */
export function slotStoreFor(location: string | undefined, table: string | undefined): SlotStore {
  if (location === undefined || location.trim() === "") return new InProcessSlotStore();
  if (/^postgres(ql)?:\/\//i.test(location)) {
    return new PostgresSlotStore(location, table || undefined);
  }
  if (location.startsWith("file://")) {
    let dir: string;
    try {
      dir = decodeURIComponent(location.slice("file://".length));
    } catch {
      throw new InvalidRateBudgetStoreError();
    }
    if (!path.isAbsolute(dir) || dir.includes("\u0000")) throw new InvalidRateBudgetStoreError();
    return new FileSlotStore(path.normalize(dir));
  }
  throw new InvalidRateBudgetStoreError();
}

/** Stores by location, one per process: every key's budget in one store shares its connection. */
const stores = new Map<string, SlotStore>();

/**
 * The budget of one (base URL, key) in this process, or undefined when the
 * environment turns pacing off. Throws on a malformed limit or location, so a
 * typo fails the run instead of silently sending unpaced.
 */
export function rateBudgetFromEnv(env: NodeJS.ProcessEnv, baseUrl: string, apiKey: string, log?: (line: string) => void): RateBudget | undefined {
  const limit = parseRateLimit(RATE_BUDGET_ENV.limit, env[RATE_BUDGET_ENV.limit]);
  if (limit === "off") return undefined;
  const location = env[RATE_BUDGET_ENV.store]?.trim() ?? "";
  const table = env[RATE_BUDGET_ENV.table]?.trim() ?? "";
  const storeKey = `${location}\u0000${table}`;
  let store = stores.get(storeKey);
  if (store === undefined) {
    store = slotStoreFor(location, table);
    stores.set(storeKey, store);
  }
  return new PacedRateBudget(store, budgetIdOf(baseUrl, apiKey), slotIntervalMs(limit), log ? { log } : {});
}
