// The shard directory of a PostgreSQL backend: rows of our tables beside
// Pulumi's, changed in transactions under an advisory lock of the stack's.
// Storage only: the plan of new assignments comes from shards/directory.ts.
import type { AssignmentPlan, DirectoryStore, DirectoryStoreOptions } from "../backend";
import { UserGroupsError } from "../../wire/errors";
import { shardOfStackFile, stackLeaf } from "../run-record";
import { assertValidStackName } from "../stack-name";
import { PostgresSession, type SqlClient } from "./session";
import { createTablesIfMissing } from "./tables";
import { postgresTarget } from "./target";

type PgClient = SqlClient;

/**
 * Rows of our table `user_groups_shard_members` beside Pulumi's (and a row per
 * stack in `user_groups_sharded_stacks` once initialized); assignments are made
 * in a transaction under an advisory lock of the stack's, so replicas agree.
 */
export class PostgresShardDirectory implements DirectoryStore {
  private readonly target: ReturnType<typeof postgresTarget>;
  private readonly stackKey: string;
  private readonly membersTable: string;
  private readonly stacksTable: string;
  private readonly session: PostgresSession;

  constructor(
    backendUrl: string,
    private readonly project: string,
    private readonly stack: string,
    options: DirectoryStoreOptions = {},
  ) {
    this.target = postgresTarget(backendUrl);
    this.stackKey = `${project}/${assertValidStackName(stack)}`;
    const schema = this.target.pulumiTable.includes(".") ? `${this.target.pulumiTable.split(".")[0]}.` : "";
    this.membersTable = `${schema}user_groups_shard_members`;
    this.stacksTable = `${schema}user_groups_sharded_stacks`;
    this.session = new PostgresSession({
      connectionString: this.target.connectionString,
      applicationName: "pulumi-user-groups shards",
      setup: (client) =>
        createTablesIfMissing(client, [
          `CREATE TABLE IF NOT EXISTS ${this.membersTable} (stack_key TEXT NOT NULL, resource_name TEXT NOT NULL, shard INTEGER NOT NULL, PRIMARY KEY (stack_key, resource_name))`,
          `CREATE TABLE IF NOT EXISTS ${this.stacksTable} (stack_key TEXT PRIMARY KEY, initialized_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
        ]),
      ownTables: [
        { table: this.membersTable, columns: { stack_key: "text", resource_name: "text", shard: "integer" } },
        { table: this.stacksTable, columns: { stack_key: "text", initialized_at: "timestamp with time zone" } },
      ],
      // The same error as Pulumi's own failure to reach the backend, and never its password.
      unreachable: (_error, detail) =>
        options.unreachable?.(`${detail} (the shard directory)`, this.target.connectionString) ??
        new UserGroupsError("backend_unreachable", `Cannot reach the backend: ${detail} (the shard directory)`),
    });
  }

  private connection(): Promise<PgClient> {
    return this.session.connection();
  }

  private async inTransaction<T>(work: (client: PgClient) => Promise<T>): Promise<T> {
    const client = await this.connection();
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`user-groups shards/${this.stackKey}`]);
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  }

  private async rows(client: PgClient): Promise<Map<string, number>> {
    const result = await client.query<{ resource_name: string; shard: number }>(`SELECT resource_name, shard FROM ${this.membersTable} WHERE stack_key = $1`, [this.stackKey]);
    return new Map(result.rows.map((row) => [row.resource_name, row.shard]));
  }

  private async insert(client: PgClient, entries: readonly (readonly [string, number])[]): Promise<void> {
    for (let at = 0; at < entries.length; at += 1000) {
      const chunk = entries.slice(at, at + 1000);
      await client.query(
        `INSERT INTO ${this.membersTable} (stack_key, resource_name, shard) SELECT $1, * FROM unnest($2::text[], $3::int[]) ON CONFLICT DO NOTHING`,
        [this.stackKey, chunk.map(([name]) => name), chunk.map(([, shard]) => shard)],
      );
    }
  }

  async read() {
    return this.rows(await this.connection());
  }

  async assign(planned: AssignmentPlan) {
    return this.inTransaction(async (client) => {
      const assigned = await this.rows(client);
      const plan = planned(assigned);
      await this.insert(
        client,
        [...plan].filter(([name]) => !assigned.has(name)),
      );
      // initialize ran first: a stack not yet marked had no root stack then.
      await client.query(`INSERT INTO ${this.stacksTable} (stack_key) VALUES ($1) ON CONFLICT DO NOTHING`, [this.stackKey]);
      return plan;
    });
  }

  async initialize(rootHeld: () => Promise<readonly string[] | undefined>) {
    const client = await this.connection();
    const done = await client.query(`SELECT 1 FROM ${this.stacksTable} WHERE stack_key = $1`, [this.stackKey]);
    if (done.rowCount !== 0) return;
    const held = await rootHeld();
    if (held === undefined) return;
    await this.inTransaction(async (tx) => {
      await this.insert(
        tx,
        held.map((name) => [name, 0] as const),
      );
      await tx.query(`INSERT INTO ${this.stacksTable} (stack_key) VALUES ($1) ON CONFLICT DO NOTHING`, [this.stackKey]);
    });
  }

  async forget(names: readonly string[], shard: number) {
    if (names.length === 0) return;
    await this.inTransaction(async (client) => {
      await client.query(`DELETE FROM ${this.membersTable} WHERE stack_key = $1 AND shard = $2 AND resource_name = ANY($3::text[])`, [this.stackKey, shard, [...names]]);
    });
  }

  async claim(names: readonly string[], shard: number) {
    return this.inTransaction(async (client) => {
      const wanted = [...new Set(names)];
      await this.insert(client, wanted.map((name) => [name, shard] as const));
      await client.query(`INSERT INTO ${this.stacksTable} (stack_key) VALUES ($1) ON CONFLICT DO NOTHING`, [this.stackKey]);
      const result = await client.query<{ resource_name: string; shard: number }>(
        `SELECT resource_name, shard FROM ${this.membersTable} WHERE stack_key = $1 AND resource_name = ANY($2::text[]) AND shard <> $3`,
        [this.stackKey, wanted, shard],
      );
      return new Map(result.rows.map((row) => [row.resource_name, row.shard]));
    });
  }

  async repair(entries: ReadonlyMap<string, number>) {
    if (entries.size === 0) return;
    await this.inTransaction(async (client) => {
      const list = [...entries];
      await client.query(
        `INSERT INTO ${this.membersTable} (stack_key, resource_name, shard) SELECT $1, * FROM unnest($2::text[], $3::int[])
         ON CONFLICT (stack_key, resource_name) DO UPDATE SET shard = EXCLUDED.shard`,
        [this.stackKey, list.map(([name]) => name), list.map(([, shard]) => shard)],
      );
      await client.query(`INSERT INTO ${this.stacksTable} (stack_key) VALUES ($1) ON CONFLICT DO NOTHING`, [this.stackKey]);
    });
  }

  async entriesOf(shard: number) {
    const client = await this.connection();
    const result = await client.query<{ resource_name: string }>(`SELECT resource_name FROM ${this.membersTable} WHERE stack_key = $1 AND shard = $2`, [this.stackKey, shard]);
    return result.rows.map((row) => row.resource_name);
  }

  async existingShards() {
    const { project, leaf } = stackLeaf(this.stack, this.project);
    const dir = `${this.target.keyPrefix}.pulumi/stacks/${project}/`;
    const client = await this.connection();
    // Matched here, not by LIKE ("_" is a LIKE wildcard).
    let result: { rows: { key: string }[] };
    try {
      result = await client.query<{ key: string }>(`SELECT key FROM ${this.target.pulumiTable} WHERE left(key, char_length($1)) = $1`, [`${dir}${leaf}.shard-`]);
    } catch (error) {
      if ((error as { code?: string }).code === "42P01") return []; // no stack in this backend yet
      throw error;
    }
    return [...new Set(result.rows.map((row) => shardOfStackFile(row.key.slice(dir.length), leaf)).filter((shard): shard is number => shard !== undefined))].sort((a, b) => a - b);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
