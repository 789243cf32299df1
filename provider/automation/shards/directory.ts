// Which Pulumi stack of a sharded stack holds each group (docs/architecture.md,
// "Shards"). The file and PostgreSQL backends rewrite a stack's whole state at
// every step, so one stack's cost grows with the square of its size; a stack
// the user names is therefore split into shards of bounded size: the stack
// itself (shard 0, where every group of an older version already lives) and
// `<stack>.shard-<k>`. A group's shard is chosen once, when it is first asked
// for, and written here before any engine run may create it; it never moves.
// A stale entry (a create that never happened, a group deleted before its
// entry was forgotten) only sends a later run to the right shard again.
//
// The rule that keeps the directory true (issue 32, "linearizable per group"):
// a shard's state holds a group only if the directory names that shard for it.
// A run creates a group in shard s only holding s's run lease and after
// `claim`ing the group for s here; an entry of s is `forget`-ten only holding
// s's run lease, for a group s's state (read under that lease) does not hold or
// that the run under it deleted. Anything else reads, plans, or writes an
// entry only where there is none (`claim`, which at worst leaves a stale one).
//
// The directory lives in the backend beside the run lease: a table of ours on
// PostgreSQL, a file (0700 directory, 0600 file) in a file backend. Other
// backends (Pulumi Cloud, S3, ...) are not sharded: their groups stay in one stack.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { UserGroupsError } from "../../wire/errors";
import { backendPlace, BackendUnreachableError } from "../engine";
import { createTablesIfMissing, PostgresSession, postgresTarget, privateDirs, type SqlClient, withFileLock, writePrivate } from "../../client/shared-state";
import { fileBackendDir } from "../backend";
import { assertValidStackName, isValidStackName } from "../model";

/**
 * Groups per shard before new groups go to the next one (RunOptions.shardSize).
 * A shard's up costs the square of its size (its state is rewritten at every
 * step) plus a fixed start; 250 was fastest of 125, 250 and 500 for an up of
 * 3,000, at the price of more shard starts in a preview whose shards changed (an
 * unchanged shard's preview reads its state only; docs/performance.md, "Scale").
 */
export const DEFAULT_SHARD_SIZE = 250;
/** The most groups a shard may be asked to hold (a shard's state is rewritten at every step). */
export const MAX_SHARD_SIZE = 5_000;
/** The most shards one stack may have. */
export const MAX_SHARDS = 10_000;

const SHARD_SUFFIX = /\.shard-\d{1,6}$/;

/** A stack name ours would make for a shard, refused as a name a user gives. */
export class ReservedStackNameError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "reserved_stack_name",
      `Stack name ${JSON.stringify(stackName.slice(0, 120))} ends in ".shard-<n>", which names the shards of a stack (docs/architecture.md, "Shards"): choose another name.`,
    );
    this.name = "ReservedStackNameError";
  }
}

/** A stack whose name leaves no room for its shards' names (at most 100 characters per segment). */
export class ShardNameError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "shard_name_too_long",
      `Stack "${stackName}" has grown past one shard, and its name is too long to name another ("<stack>.shard-<n>" must fit in 100 characters): use a shorter stack name.`,
    );
    this.name = "ShardNameError";
  }
}

export function isShardStackName(stack: string): boolean {
  return SHARD_SUFFIX.test(stack.split("/").at(-1) ?? "");
}

/** Throws ReservedStackNameError for a name the user may not give (a shard's). */
export function assertUserStackName(stack: string): string {
  assertValidStackName(stack);
  if (isShardStackName(stack)) throw new ReservedStackNameError(stack);
  return stack;
}

/** The Pulumi stack of shard `shard` of `stack`: the stack itself for 0. */
export function shardStackName(stack: string, shard: number): string {
  if (shard === 0) return stack;
  const name = `${stack}.shard-${shard}`;
  if (!isValidStackName(name)) throw new ShardNameError(stack);
  return name;
}

/** Checks a shard size given by a caller. */
export function validShardSize(size: number | undefined): number {
  if (size === undefined) return DEFAULT_SHARD_SIZE;
  if (!Number.isInteger(size) || size < 1 || size > MAX_SHARD_SIZE) throw new RangeError(`shardSize must be a whole number from 1 to ${MAX_SHARD_SIZE}`);
  return size;
}

/**
 * Shards for the names not yet assigned: each to the lowest shard with room
 * (shard 0 first), in the order given. Pure: `assigned` and `counts` are the
 * directory as read; the answer holds every name of `names`.
 */
export function planAssignments(
  assigned: ReadonlyMap<string, number>,
  counts: ReadonlyMap<number, number>,
  names: readonly string[],
  shardSize: number,
): Map<string, number> {
  const plan = new Map<string, number>();
  const filled = new Map(counts);
  let shard = 0;
  for (const name of names) {
    const known = assigned.get(name) ?? plan.get(name);
    if (known !== undefined) {
      plan.set(name, known);
      continue;
    }
    while ((filled.get(shard) ?? 0) >= shardSize) shard += 1;
    if (shard >= MAX_SHARDS) throw new RangeError(`a stack holds at most ${MAX_SHARDS} shards of ${shardSize} groups`);
    plan.set(name, shard);
    filled.set(shard, (filled.get(shard) ?? 0) + 1);
  }
  return plan;
}

/** The shards that hold at least one group, and shard 0 always (in order). */
export function shardsOf(assigned: ReadonlyMap<string, number>): number[] {
  return [...new Set([0, ...assigned.values()])].sort((a, b) => a - b);
}

/** How many groups each shard holds, by the directory. */
export function countsOf(assigned: ReadonlyMap<string, number>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const shard of assigned.values()) counts.set(shard, (counts.get(shard) ?? 0) + 1);
  return counts;
}

export interface ShardDirectory {
  /** Whether groups of this stack may go to more than one shard (false: a backend without a directory). */
  readonly sharded: boolean;
  /** Every assignment. `initialize` first, once per stack. */
  read(): Promise<Map<string, number>>;
  /**
   * Assigns the names that have no shard yet (planAssignments, under the
   * directory's lock, so that concurrent runs agree) and answers every name's shard.
   */
  assign(names: readonly string[], shardSize: number): Promise<Map<string, number>>;
  /**
   * Records, once per stack, the groups its root stack already holds (a stack
   * of an older version, or made before this directory existed) as shard 0's.
   * `rootHeld` answers undefined when there is no root stack: nothing is
   * written then (a read of a stack that does not exist leaves no trace); the
   * first assignment marks the directory initialized.
   */
  initialize(rootHeld: () => Promise<readonly string[] | undefined>): Promise<void>;
  /**
   * Drops the entries of these groups that name `shard`. Only under that
   * shard's run lease, for groups its state (read under the lease) does not hold.
   */
  forget(names: readonly string[], shard: number): Promise<void>;
  /**
   * Claims the names for `shard` (under its run lease, before a run that may
   * create them): an entry is written where there is none; answers the names
   * whose entry names another shard (not to be created here).
   */
  claim(names: readonly string[], shard: number): Promise<Map<string, number>>;
  /** Sets entries as a shard's state (read under its run lease) proves them, whatever they said. */
  repair(entries: ReadonlyMap<string, number>): Promise<void>;
  /** The names whose entry names `shard`. */
  entriesOf(shard: number): Promise<string[]>;
  /** The shards other than 0 whose Pulumi stack exists in the backend, whether the directory names them or not. */
  existingShards(): Promise<number[]>;
  close(): Promise<void>;
}

/** The stack's last name segment and project, as the backend files its stacks. */
function stackLeaf(stack: string, project: string): { project: string; leaf: string } {
  const parts = assertValidStackName(stack).split("/");
  return { project: parts.length === 3 ? parts[1]! : project, leaf: parts.at(-1)! };
}

/** The shard number of a stack file or key of the backend (`<leaf>.shard-<n>.json`), if it is one of this stack's. */
function shardOfStackFile(file: string, leaf: string): number | undefined {
  if (!file.startsWith(`${leaf}.shard-`)) return undefined;
  const match = /^\.shard-(\d{1,6})\.json(\.gz)?$/.exec(file.slice(leaf.length));
  const shard = match ? Number(match[1]) : undefined;
  return shard !== undefined && shard > 0 && shard < MAX_SHARDS ? shard : undefined;
}

/** A backend without a directory: one stack, as before shards. */
class SingleStackDirectory implements ShardDirectory {
  readonly sharded = false;
  async read() {
    return new Map<string, number>();
  }
  async assign(names: readonly string[]) {
    return new Map(names.map((name) => [name, 0]));
  }
  async initialize() {}
  async forget() {}
  async claim() {
    return new Map<string, number>();
  }
  async repair() {}
  async entriesOf() {
    return [];
  }
  async existingShards() {
    return [];
  }
  async close() {}
}

// ---------------------------------------------------------------- file backend

const fileDirectorySchema = z.object({
  version: z.literal(1),
  initialized: z.boolean(),
  groups: z.record(z.string(), z.number().int().min(0).max(MAX_SHARDS)),
});
type FileDirectoryData = z.infer<typeof fileDirectorySchema>;

const LOCK_STALE_MS = 60_000;
const LOCK_WAIT_MS = 30_000;
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024;

/**
 * `<backend>/.user-groups/shards/<project>/<stack>/directory.json`, rewritten
 * whole (through a temporary file) under `directory.lock` (client/file-lock.ts),
 * which a crashed holder leaves behind: a lock whose pid is dead on this host,
 * or older than a minute (a critical section takes milliseconds), is broken.
 */
export class FileShardDirectory implements ShardDirectory {
  readonly sharded = true;
  private readonly dir: string;

  constructor(
    private readonly backendDir: string,
    private readonly project: string,
    private readonly stack: string,
  ) {
    this.dir = path.join(backendDir, ".user-groups", "shards", project, encodeURIComponent(assertValidStackName(stack)));
  }

  private get file(): string {
    return path.join(this.dir, "directory.json");
  }

  private load(): FileDirectoryData {
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, initialized: false, groups: {} };
      throw error;
    }
    if (text.length > MAX_DIRECTORY_BYTES) throw new UserGroupsError("shard_directory_invalid", `The shard directory ${this.file} is larger than ${MAX_DIRECTORY_BYTES} bytes.`);
    const parsed = fileDirectorySchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new UserGroupsError("shard_directory_invalid", `The shard directory ${this.file} is not one this version wrote: ${parsed.error.issues[0]?.message ?? "invalid"}.`);
    return parsed.data;
  }

  private save(data: FileDirectoryData): void {
    writePrivate(this.file, `${JSON.stringify(data)}\n`, false);
  }

  private locked<T>(work: () => T): Promise<T> {
    privateDirs(this.backendDir, this.dir);
    return withFileLock(
      path.join(this.dir, "directory.lock"),
      {
        staleMs: LOCK_STALE_MS,
        waitMs: LOCK_WAIT_MS,
        timedOut: () => new UserGroupsError("shard_directory_locked", `The shard directory ${this.dir} stayed locked; remove directory.lock there if no run is going on.`),
      },
      work,
    );
  }

  async read() {
    return new Map(Object.entries(this.load().groups));
  }

  async assign(names: readonly string[], shardSize: number) {
    return this.locked(() => {
      const data = this.load();
      const assigned = new Map(Object.entries(data.groups));
      const plan = planAssignments(assigned, countsOf(assigned), names, shardSize);
      const fresh = [...plan].filter(([name]) => !assigned.has(name));
      // initialize ran first: an uninitialized directory here means the root stack did not exist.
      if (fresh.length > 0 || !data.initialized) this.save({ version: 1, initialized: true, groups: { ...data.groups, ...Object.fromEntries(fresh) } });
      return plan;
    });
  }

  async initialize(rootHeld: () => Promise<readonly string[] | undefined>) {
    if (this.load().initialized) return;
    const held = await rootHeld();
    if (held === undefined) return;
    await this.locked(() => {
      const data = this.load();
      if (data.initialized) return;
      const groups = { ...data.groups };
      for (const name of held) groups[name] ??= 0;
      this.save({ version: 1, initialized: true, groups });
    });
  }

  async forget(names: readonly string[], shard: number) {
    if (names.length === 0) return;
    await this.locked(() => {
      const data = this.load();
      const groups = { ...data.groups };
      for (const name of names) if (groups[name] === shard) delete groups[name];
      this.save({ ...data, groups });
    });
  }

  async claim(names: readonly string[], shard: number) {
    return this.locked(() => {
      const data = this.load();
      const groups = { ...data.groups };
      const elsewhere = new Map<string, number>();
      let fresh = false;
      for (const name of names) {
        const known = groups[name];
        if (known === undefined) {
          groups[name] = shard;
          fresh = true;
        } else if (known !== shard) elsewhere.set(name, known);
      }
      if (fresh) this.save({ ...data, initialized: true, groups });
      return elsewhere;
    });
  }

  async repair(entries: ReadonlyMap<string, number>) {
    if (entries.size === 0) return;
    await this.locked(() => {
      const data = this.load();
      this.save({ ...data, initialized: true, groups: { ...data.groups, ...Object.fromEntries(entries) } });
    });
  }

  async entriesOf(shard: number) {
    return Object.entries(this.load().groups)
      .filter(([, at]) => at === shard)
      .map(([name]) => name);
  }

  async existingShards() {
    const { project, leaf } = stackLeaf(this.stack, this.project);
    let files: string[];
    try {
      files = readdirSync(path.join(this.backendDir, ".pulumi", "stacks", project));
    } catch {
      return [];
    }
    return [...new Set(files.map((file) => shardOfStackFile(file, leaf)).filter((shard): shard is number => shard !== undefined))].sort((a, b) => a - b);
  }

  async close() {}
}

// ---------------------------------------------------------------- PostgreSQL backend

type PgClient = SqlClient;

/**
 * Rows of our table `user_groups_shard_members` beside Pulumi's (and a row per
 * stack in `user_groups_sharded_stacks` once initialized); assignments are made
 * in a transaction under an advisory lock of the stack's, so replicas agree.
 */
export class PostgresShardDirectory implements ShardDirectory {
  readonly sharded = true;
  private readonly target: ReturnType<typeof postgresTarget>;
  private readonly stackKey: string;
  private readonly membersTable: string;
  private readonly stacksTable: string;
  private readonly session: PostgresSession;

  constructor(
    backendUrl: string,
    private readonly project: string,
    private readonly stack: string,
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
      unreachable: (_error, detail) => new BackendUnreachableError("backend_unreachable", backendPlace(this.target.connectionString), `${detail} (the shard directory)`),
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

  async assign(names: readonly string[], shardSize: number) {
    return this.inTransaction(async (client) => {
      const assigned = await this.rows(client);
      const plan = planAssignments(assigned, countsOf(assigned), names, shardSize);
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

/** The shard directory of a stack in this backend (one stack, unsharded, where the backend has none). */
export function shardDirectoryFor(backendUrl: string, project: string, stack: string): ShardDirectory {
  const dir = fileBackendDir(backendUrl);
  if (dir !== undefined) return new FileShardDirectory(dir, project, stack);
  if (/^postgres(ql)?:\/\//i.test(backendUrl)) return new PostgresShardDirectory(backendUrl, project, stack);
  return new SingleStackDirectory();
}
