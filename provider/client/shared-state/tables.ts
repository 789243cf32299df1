// Creating a PostgreSQL table that several sessions may race to create.

/** The part of a `pg` client these helpers need. */
export interface SqlSession {
  query(statement: string): Promise<unknown>;
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
