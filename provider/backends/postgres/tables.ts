// Creating a PostgreSQL table that several sessions may race to create, and
// checking, before use, that a table of ours is ours: where a less-trusted role
// may create tables in the backend's schema (PostgreSQL 14 and older let every
// role create in `public`), it could create one of our tables first, with a
// trigger or a rule that runs with our rights, or with rows we would trust.
import { UserGroupsError } from "../../wire/errors";

/** The part of a `pg` client these helpers need. */
export interface SqlSession {
  query(statement: string, values?: unknown[]): Promise<unknown>;
}

/**
 * What PostgreSQL answers the loser of two sessions creating one table at once:
 * the catalog's unique index (23505), the table's row type (42710 "type ...
 * already exists"), or the table itself (42P07).
 */
const CREATE_RACE_CODES = new Set(["23505", "42710", "42P07"]);

/**
 * Runs each `CREATE TABLE IF NOT EXISTS`. Two sessions creating a table at once:
 * one loses (CREATE_RACE_CODES); the table is there, which a second try confirms.
 */
export async function createTablesIfMissing(session: SqlSession, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    for (let attempt = 1; ; attempt++) {
      try {
        await session.query(statement);
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === undefined || !CREATE_RACE_CODES.has(code) || attempt >= 3) throw error;
      }
    }
  }
}

/** A table of ours as we create it: its name as our statements spell it, each column's type as `format_type` prints it. */
export interface OwnTableSpec {
  readonly table: string;
  readonly columns: Readonly<Record<string, string>>;
}

/** A table of ours that someone else made or changed: refused before any use. */
export class BackendTableUntrustedError extends UserGroupsError {
  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(
      "backend_table_untrusted",
      `The backend's table ${JSON.stringify(table.slice(0, 120))} is not one this package can trust: ${reason}. ` +
        "Refusing to use it (nothing was read from or written to it). It is ours to create: if another role made or changed it, " +
        "drop it (or give it to this role, without triggers or rules) and try again; on PostgreSQL 14 and older, " +
        "`REVOKE CREATE ON SCHEMA public FROM PUBLIC` keeps other roles from making tables there.",
    );
    this.name = "BackendTableUntrustedError";
  }
}

interface TableFacts {
  relkind: string;
  owner: string;
  trusted_owner: boolean;
  triggers: string[];
  rules: string[];
  columns: string[];
}

/**
 * The table the name resolves to (as our statements resolve it: search_path),
 * its owner (trusted: this role, a role whose rights this role has without
 * being a superuser, or a superuser), its triggers (not the internal ones of
 * constraints), its rules, its columns.
 */
const FACTS = `
SELECT c.relkind::text AS relkind,
       pg_get_userbyid(c.relowner) AS owner,
       (c.relowner = me.oid
        OR (NOT me.rolsuper AND pg_has_role(me.oid, c.relowner, 'USAGE'))
        OR (SELECT o.rolsuper FROM pg_roles o WHERE o.oid = c.relowner)) AS trusted_owner,
       ARRAY(SELECT t.tgname::text FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal ORDER BY 1) AS triggers,
       ARRAY(SELECT r.rulename::text FROM pg_rewrite r WHERE r.ev_class = c.oid ORDER BY 1) AS rules,
       ARRAY(SELECT a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS columns
FROM pg_class c, (SELECT oid, rolsuper FROM pg_roles WHERE rolname = current_user) me
WHERE c.oid = to_regclass($1)`;

/**
 * Checks each table before use: a plain table, owned by this role (or one whose
 * rights it has), with no trigger and no rule, with exactly the expected
 * columns. Throws BackendTableUntrustedError naming the first table that fails.
 */
export async function verifyOwnTables(session: SqlSession, specs: readonly OwnTableSpec[]): Promise<void> {
  for (const spec of specs) {
    const result = (await session.query(FACTS, [spec.table])) as { rows: TableFacts[] };
    const facts = result.rows[0];
    if (facts === undefined) throw new BackendTableUntrustedError(spec.table, "it does not exist after it was created (another schema on the search path?)");
    if (facts.relkind !== "r") throw new BackendTableUntrustedError(spec.table, `it is not a plain table (relkind ${JSON.stringify(facts.relkind)})`);
    if (!facts.trusted_owner) throw new BackendTableUntrustedError(spec.table, `it is owned by role ${JSON.stringify(facts.owner)}, not by this connection's role`);
    if (facts.triggers.length > 0) throw new BackendTableUntrustedError(spec.table, `it has triggers (${facts.triggers.map((t) => JSON.stringify(t)).join(", ")})`);
    if (facts.rules.length > 0) throw new BackendTableUntrustedError(spec.table, `it has rules (${facts.rules.map((r) => JSON.stringify(r)).join(", ")})`);
    const expected = Object.entries(spec.columns).map(([name, type]) => `${name} ${type}`).sort();
    const actual = [...facts.columns].sort();
    if (expected.join("\n") !== actual.join("\n")) {
      throw new BackendTableUntrustedError(spec.table, `its columns are (${facts.columns.join(", ")}), not (${expected.join(", ")})`);
    }
  }
}
