// The fence that makes a PostgreSQL run lease's expiry safe (lease-store.ts,
// the file header): a trigger on Pulumi's table refuses every write from a
// session whose application_name says it is the engine of one of our runs
// (`ug-run:<lease id>:<epoch>`) unless that epoch is the lease's current one and
// unexpired. Installed once per table, beside the lease table, in its schema.
import type { SqlClient } from "./session";
import { isSqlName, type postgresTarget } from "./target";
import { UserGroupsError } from "../../wire/errors";

type PostgresTarget = ReturnType<typeof postgresTarget>;

/** The fence function's name (a new version gets a new name). */
const FENCE_FUNCTION = "user_groups_run_fence_v1";
const FENCE_TRIGGER = "user_groups_run_fence";

/** The fence could not be installed (`run_lease_fence`): the backend's role must own Pulumi's table. */
export class LeaseFenceError extends UserGroupsError {
  constructor(table: string, detail: string) {
    super(
      "run_lease_fence",
      `Cannot install the run fence on the backend's table ${table} (${detail}): the backend's role must own it (as it does when Pulumi created it with that role).`,
    );
    this.name = "LeaseFenceError";
  }
}

/** The schema a table of ours resolved to, checked as a plain name before it goes into a statement. */
async function schemaOf(client: SqlClient, table: string): Promise<string> {
  const result = await client.query<{ schema: string | null }>(
    "SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)",
    [table],
  );
  const schema = result.rows[0]?.schema;
  if (!schema || !isSqlName(schema) || schema.includes(".")) throw new LeaseFenceError(table, "its schema is not a plain SQL name");
  return schema;
}

/**
 * The trigger on Pulumi's table that refuses a stale engine's writes (see the
 * file header). Installed once per table; racing installers are harmless.
 */
export async function ensureRunFence(client: SqlClient, target: PostgresTarget): Promise<void> {
  const present = await client.query<{ ok: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = to_regclass($1) AND t.tgname = $2 AND p.proname = $3 AND t.tgenabled <> 'D') AS ok`,
    [target.pulumiTable, FENCE_TRIGGER, FENCE_FUNCTION],
  );
  if (present.rows[0]?.ok) return;
  const schema = await schemaOf(client, target.leaseTable);
  const leases = `"${schema}".user_groups_run_leases`;
  const fn = `"${schema}".${FENCE_FUNCTION}`;
  const statements = [
    `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fence$
DECLARE
m text[] := regexp_match(coalesce(current_setting('application_name', true), ''), '^ug-run:([0-9a-f]{16}):([0-9]{1,15})$');
BEGIN
IF m IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM ${leases} l
  WHERE l.lease_id = m[1] AND l.epoch = m[2]::bigint AND NOT l.released AND l.expires_at > clock_timestamp()
) THEN
  RAISE EXCEPTION 'run_fenced: this run (lease %, epoch %) no longer holds the stack: its write is refused', m[1], m[2]
    USING ERRCODE = 'insufficient_privilege';
END IF;
IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
RETURN NEW;
END
$fence$`,
    `DROP TRIGGER IF EXISTS ${FENCE_TRIGGER} ON ${target.pulumiTable}`,
    `CREATE TRIGGER ${FENCE_TRIGGER} BEFORE INSERT OR UPDATE OR DELETE ON ${target.pulumiTable} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  ];
  try {
    await client.query("BEGIN");
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    // Another replica installing it at the same moment: it is there now.
    const again = await client.query<{ ok: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2) AS ok",
      [target.pulumiTable, FENCE_TRIGGER],
    );
    if (again.rows[0]?.ok) return;
    const code = (error as { code?: string }).code;
    throw new LeaseFenceError(target.pulumiTable, code === "42501" ? "permission denied" : `SQL state ${code ?? "unknown"}`);
  }
}
