// Small pieces every store of shared state uses (the run lease, the shard
// directory, the rate budget): whether a process of this host is alive, and
// the creation of a PostgreSQL table that several sessions may race to create.

/** Whether a process of this host exists (another user's counts: EPERM). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The part of a `pg` client these helpers need. */
export interface SqlSession {
  query(statement: string): Promise<unknown>;
}

/**
 * Runs each `CREATE TABLE IF NOT EXISTS`. Two sessions creating a table at once:
 * one loses on the catalog's unique index (23505, or 42P07); the table is there,
 * which a second try confirms.
 */
export async function createTablesIfMissing(session: SqlSession, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    for (let attempt = 1; ; attempt++) {
      try {
        await session.query(statement);
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if ((code !== "23505" && code !== "42P07") || attempt >= 3) throw error;
      }
    }
  }
}
