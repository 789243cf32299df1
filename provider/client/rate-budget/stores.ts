// Which rate budget a provider process uses, from its environment: the limit
// (USER_GROUPS_RATE_LIMIT, the user's) and where the budget is shared
// (USER_GROUPS_RATE_BUDGET and USER_GROUPS_RATE_BUDGET_TABLE, which the
// automation layer sets from the stack's backend: SharedBackend.rateBudgetEnv),
// the store itself its backend's adapter's (backends/), with the slot arithmetic
// of budget.ts handed to it.
import { RATE_BUDGET_ENV, slotStoreAt } from "../../backends";
import { budgetIdOf, InProcessSlotStore, PacedRateBudget, parseRateLimit, type RateBudget, SLOT_RULES, type SlotStore, slotIntervalMs } from "./budget";
import { UserGroupsError } from "../../wire/errors";

export { RATE_BUDGET_ENV } from "../../backends";

export class InvalidRateBudgetStoreError extends UserGroupsError {
  constructor() {
    super("invalid_rate_budget_store", `${RATE_BUDGET_ENV.store} must be a postgres:// URL or a file:// URL of an absolute directory`);
    this.name = "InvalidRateBudgetStoreError";
  }
}

/** The store a budget location names (checked before anything is opened). */
export function slotStoreFor(location: string | undefined, table: string | undefined): SlotStore {
  if (location === undefined || location.trim() === "") return new InProcessSlotStore();
  const store = slotStoreAt(location, table, SLOT_RULES);
  if (store === undefined) throw new InvalidRateBudgetStoreError();
  return store;
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
