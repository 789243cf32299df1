// rate-budget/: one rate budget per API key, shared by every process that uses it
// through the stack's backend (a PostgreSQL table or a ledger file), or kept per
// process.
export { RATE_SAFETY, type RateBudget } from "./budget";
export { RATE_BUDGET_ENV, rateBudgetFromEnv } from "./stores";
