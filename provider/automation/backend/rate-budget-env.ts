// Where the provider processes of a run share their keys' rate budget
// (client/rate-budget-stores.ts reads it): the stack's own backend, so that
// every run on it (shards, fleet replicas on other hosts, a person's CLI run)
// books from one budget per key.
// - postgres://: a table beside Pulumi's (its schema), reached with the backend's
//   connection; the password is not in this URL (engineBackendEnv moves it to
//   PGPASSWORD, which the provider process inherits from the engine).
// - file://: a ledger directory in the backend, `.user-groups/rate-budget/`.
// - any other backend: nothing; each process keeps its own budget.
import path from "node:path";
import { DEFAULT_BUDGET_TABLE, RATE_BUDGET_ENV } from "../../client/rate-budget";
import { engineBackendEnv } from "./backend-url";
import { postgresTarget } from "../../client/shared-state";
import { fileBackendDir } from "./file-backend";

export function rateBudgetEnv(backendUrl: string): Record<string, string> {
  const dir = fileBackendDir(backendUrl);
  if (dir !== undefined) return { [RATE_BUDGET_ENV.store]: `file://${encodeURI(path.join(path.resolve(dir), ".user-groups", "rate-budget"))}` };
  if (/^postgres(ql)?:\/\//i.test(backendUrl)) {
    const target = postgresTarget(engineBackendEnv(backendUrl).PULUMI_BACKEND_URL);
    const schema = target.pulumiTable.includes(".") ? `${target.pulumiTable.split(".")[0]}.` : "";
    return { [RATE_BUDGET_ENV.store]: target.connectionString, [RATE_BUDGET_ENV.table]: `${schema}${DEFAULT_BUDGET_TABLE}` };
  }
  return {};
}
