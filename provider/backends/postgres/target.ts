// A postgres:// backend URL as our stores use it: the connection string, Pulumi's
// table and ours beside it, the prefix of Pulumi's keys; a driver's message
// without the password.
import { UserGroupsError } from "../../wire/errors";

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

/** A plain SQL name (letters, digits, _; optionally schema.table): the only table names we put into a statement. */
export function isSqlName(name: string): boolean {
  return SQL_NAME.test(name);
}

export class BackendTableNameError extends UserGroupsError {
  constructor(readonly table: string) {
    super("backend_table_name", `The backend URL's table ${JSON.stringify(table.slice(0, 80))} is not a plain SQL name (letters, digits, _; optionally schema.table): refusing to use it.`);
    this.name = "BackendTableNameError";
  }
}

/**
 * The connection string (our `table` option off), the tables (Pulumi's, and ours
 * beside it), and the prefix of Pulumi's keys: the diy backend files every key
 * under the URL's path (the database name), `postgres/.pulumi/...`.
 */
export function postgresTarget(backendUrl: string): { connectionString: string; pulumiTable: string; recordTable: string; leaseTable: string; waiterTable: string; keyPrefix: string } {
  const url = new URL(backendUrl);
  const pulumiTable = url.searchParams.get("table") || "pulumi_state";
  if (!isSqlName(pulumiTable)) throw new BackendTableNameError(pulumiTable);
  url.searchParams.delete("table");
  // The SSL modes as Pulumi's driver (lib/pq) reads them, "require" when unset: the same connection as the backend's.
  if (!url.searchParams.has("sslmode")) url.searchParams.set("sslmode", "require");
  if (!url.searchParams.has("uselibpqcompat")) url.searchParams.set("uselibpqcompat", "true");
  const schema = pulumiTable.includes(".") ? `${pulumiTable.split(".")[0]}.` : "";
  const subDir = decodeURIComponent(url.pathname).replace(/^\/+/, "");
  const keyPrefix = subDir === "" ? "" : subDir.endsWith("/") ? subDir : `${subDir}/`;
  return { connectionString: url.toString(), pulumiTable, recordTable: `${schema}user_groups_run_records`, leaseTable: `${schema}user_groups_run_leases`, waiterTable: `${schema}user_groups_run_lease_waiters`, keyPrefix };
}

/** A driver's message with the URL's password (if it ever showed) taken out. */
export function withoutSecret(message: string, connectionString: string): string {
  const password = decodeURIComponent(new URL(connectionString).password);
  return password.length > 0 ? message.split(password).join("****") : message;
}
