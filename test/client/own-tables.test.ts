// Issue 32 item 5: only our own tables. A less-trusted role that may create
// tables in the backend's schema (PostgreSQL 14 and older: every role, in
// `public`) plants our tables before we make them: the rate budget's with a
// trigger that would run with the fleet's rights and copy Pulumi's state out,
// the run records' with a record whose adopt list names another stack's group,
// the shard directory's with a rule. Each is refused before use, by name, and
// the attack's effect never happens. The fleet connects as an unprivileged role.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "pg";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupFleet } from "../../provider/automation";
import { PostgresLeaseStore } from "../../provider/backends/postgres/lease-store";
import { leaseRules } from "../../provider/automation/lease/record";
import { SLOT_RULES } from "../../provider/client/rate-budget/budget";
import { PostgresShardDirectory } from "../../provider/backends/postgres/directory-store";
import { PostgresSlotStore } from "../../provider/backends/postgres/slot-store";
import { BackendTableUntrustedError, verifyOwnTables } from "../../provider/backends/postgres";
import { startPostgres, type PostgresServer } from "../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "own-tables-key-0001";
let server: FakeServer;
let postgres: PostgresServer;
let env: PulumiTestEnv;
let admin: Client;

/** A database of its own per test, the fleet role and the less-trusted role both allowed to create in its `public`. */
let database = 0;
async function freshDatabase(): Promise<{ name: string; fleetUrl: string; as: (role: string) => Promise<Client> }> {
  const name = `own_tables_${++database}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const as = async (role: string) => {
    const { Client } = await import("pg");
    const client = new Client({ host: "127.0.0.1", port: postgres.port, user: role, database: name });
    client.on("error", () => undefined); // the server stopping at the end
    await client.connect();
    return client;
  };
  const owner = await as("postgres");
  // PostgreSQL 14 and older grant this to PUBLIC by default.
  await owner.query("GRANT CREATE, USAGE ON SCHEMA public TO fleet, mallory");
  await owner.end();
  return { name, fleetUrl: `postgres://fleet@127.0.0.1:${postgres.port}/${name}?sslmode=disable`, as };
}

beforeAll(async () => {
  postgres = await startPostgres();
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("own-tables");
  const { Client } = await import("pg");
  admin = new Client({ host: "127.0.0.1", port: postgres.port, user: "postgres", database: "postgres" });
  admin.on("error", () => undefined);
  await admin.connect();
  await admin.query("CREATE ROLE fleet LOGIN");
  await admin.query("CREATE ROLE mallory LOGIN");
});
afterAll(async () => {
  await admin?.end();
  await server?.close();
  postgres?.stop();
  env?.cleanup();
});

function fleetOf(backendUrl: string, stack: string): UserGroupFleet {
  return new UserGroupFleet({
    stack,
    backendUrl,
    workDir: path.join(env.workDir, stack),
    passphrase: "own-tables",
    lockTimeoutMs: 20_000,
    envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  });
}

describe("tables another role planted are refused before use", () => {
  it("the rate budget's table with a trigger: refused by name, the trigger never runs", async () => {
    const db = await freshDatabase();
    const mallory = await db.as("mallory");
    await mallory.query("CREATE TABLE marker (seen TEXT)");
    await mallory.query("GRANT INSERT ON marker TO PUBLIC");
    await mallory.query("CREATE TABLE user_groups_rate_budget (budget_id TEXT PRIMARY KEY, next_free TIMESTAMPTZ NOT NULL)");
    await mallory.query("GRANT ALL ON user_groups_rate_budget TO PUBLIC");
    await mallory.query(`CREATE FUNCTION steal() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO marker VALUES (current_user || ' ' || coalesce((SELECT string_agg(key, ',') FROM pulumi_state), 'ran')); RETURN NEW; END $$`);
    await mallory.query("CREATE TRIGGER steal BEFORE INSERT OR UPDATE ON user_groups_rate_budget FOR EACH ROW EXECUTE FUNCTION steal()");
    // Pulumi's own table, as the fleet's backend holds it.
    const fleet = await db.as("fleet");
    await fleet.query("CREATE TABLE pulumi_state (key TEXT PRIMARY KEY, data JSONB)");
    await fleet.query("INSERT INTO pulumi_state VALUES ('secret-key', '{}')");

    const store = new PostgresSlotStore(db.fleetUrl, undefined, SLOT_RULES);
    try {
      const refusal = await store.book("budget-1", 100).then(() => undefined, (error: unknown) => error);
      expect(refusal).toBeInstanceOf(BackendTableUntrustedError);
      expect(refusal).toMatchObject({ code: "backend_table_untrusted", table: "user_groups_rate_budget" });
      expect((refusal as Error).message).toMatch(/"user_groups_rate_budget".*owned by role "mallory"/);
      await expect(store.hold("budget-1", 100)).rejects.toMatchObject({ code: "backend_table_untrusted" });
    } finally {
      await store.close();
    }
    expect((await mallory.query("SELECT * FROM marker")).rows).toEqual([]);
    expect((await mallory.query("SELECT count(*)::int AS n FROM user_groups_rate_budget")).rows).toEqual([{ n: 0 }]);
    await fleet.end();
    await mallory.end();
  });

  it("the shard directory's table with a rule, and a table of ours someone changed: refused by name", async () => {
    const db = await freshDatabase();
    const mallory = await db.as("mallory");
    await mallory.query("CREATE TABLE marker (seen TEXT)");
    await mallory.query("GRANT INSERT ON marker TO PUBLIC");
    await mallory.query("CREATE TABLE user_groups_shard_members (stack_key TEXT NOT NULL, resource_name TEXT NOT NULL, shard INTEGER NOT NULL, PRIMARY KEY (stack_key, resource_name))");
    await mallory.query("GRANT ALL ON user_groups_shard_members TO PUBLIC");
    await mallory.query("CREATE RULE copy AS ON INSERT TO user_groups_shard_members DO ALSO INSERT INTO marker VALUES (NEW.resource_name)");
    const directory = new PostgresShardDirectory(db.fleetUrl, "user-groups", "planted");
    try {
      await expect(directory.read()).rejects.toMatchObject({ code: "backend_table_untrusted", table: "user_groups_shard_members" });
      await expect(directory.assign(() => new Map([["default.x", 0]]))).rejects.toMatchObject({ code: "backend_table_untrusted" });
    } finally {
      await directory.close();
    }
    expect((await mallory.query("SELECT * FROM marker")).rows).toEqual([]);

    // The fleet's own tables pass; one of them changed (a column more) is refused.
    const fleet = await db.as("fleet");
    await fleet.query("CREATE TABLE mine (budget_id TEXT PRIMARY KEY, next_free TIMESTAMPTZ NOT NULL)");
    await verifyOwnTables(fleet, [{ table: "mine", columns: { budget_id: "text", next_free: "timestamp with time zone" } }]);
    await fleet.query("ALTER TABLE mine ADD COLUMN extra TEXT");
    await expect(verifyOwnTables(fleet, [{ table: "mine", columns: { budget_id: "text", next_free: "timestamp with time zone" } }])).rejects.toThrow(
      /"mine".*columns are \(budget_id text, next_free timestamp with time zone, extra text\)/,
    );
    await fleet.end();
    await mallory.end();
  });

  it("a planted run record whose adopt list names another stack's group: the next ensure is refused, the group untouched", async () => {
    const db = await freshDatabase();
    // The fleet's own stack "victims" holds a group, made as usual (tables of ours, checked and passing).
    const victims = fleetOf(db.fleetUrl, "victims");
    let victim;
    try {
      victim = await victims.ensure({ name: "Victim group", userGroupId: "victim-1" });
      expect(victim.change).toBe("create");
    } finally {
      await victims.close();
    }
    // A fresh database for the attacked stack's tables: mallory plants the run records first.
    const db2 = await freshDatabase();
    const mallory = await db2.as("mallory");
    await mallory.query("CREATE TABLE user_groups_run_records (stack_key TEXT PRIMARY KEY, record JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    await mallory.query("GRANT ALL ON user_groups_run_records TO PUBLIC");
    const planted = {
      version: 1,
      runId: "gone-run",
      host: "elsewhere",
      pid: 1,
      startedAt: 0,
      renewedAt: 0,
      expiresAt: 0,
      released: true,
      unfinished: [],
      adopt: [{ resourceName: "default.victim-1", inputs: { name: "Taken over", userGroupId: "victim-1" } }],
    };
    await mallory.query("INSERT INTO user_groups_run_records (stack_key, record) VALUES ($1, $2)", ["user-groups/attacked", JSON.stringify(planted)]);

    const lease = new PostgresLeaseStore(db2.fleetUrl, "user-groups", "attacked", { rules: leaseRules() });
    try {
      const refusal = await lease.tryAcquire({ runId: "r", host: "h", pid: 1, startedAt: Date.now(), renewedAt: Date.now() }).then(() => undefined, (error: unknown) => error);
      expect(refusal).toMatchObject({ code: "backend_table_untrusted", table: "user_groups_run_records" });
    } finally {
      await lease.close();
    }
    const attacked = fleetOf(db2.fleetUrl, "attacked");
    try {
      const outcome = await attacked.ensure({ name: "Mine", userGroupId: "mine-1" }).then(() => undefined, (error: unknown) => error);
      expect(String((outcome as Error | undefined)?.message)).toMatch(/user_groups_run_records/);
      expect(outcome).toMatchObject({ code: "backend_table_untrusted" });
    } finally {
      await attacked.close();
    }
    const stored = server.groups().find((g) => g.user_group_id === "victim-1");
    expect(stored).toMatchObject({ name: "Victim group", token: victim.token });
    expect(server.groups().some((g) => g.user_group_id === "mine-1")).toBe(false);
    await mallory.end();
  });

  it("the lease's waiters table with a trigger: refused by name before the lease is taken, the trigger never runs", async () => {
    const db = await freshDatabase();
    const mallory = await db.as("mallory");
    await mallory.query("CREATE TABLE marker (seen TEXT)");
    await mallory.query("GRANT INSERT ON marker TO PUBLIC");
    // As the lease creates it, but mallory's, with a trigger that would run whenever a waiter takes its place in the queue.
    await mallory.query(
      "CREATE TABLE user_groups_run_lease_waiters (stack_key TEXT NOT NULL, waiter_id TEXT NOT NULL, since TIMESTAMPTZ NOT NULL, seen_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (stack_key, waiter_id))",
    );
    await mallory.query("GRANT ALL ON user_groups_run_lease_waiters TO PUBLIC");
    await mallory.query("CREATE FUNCTION queued() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO marker VALUES (current_user); RETURN NEW; END $$");
    await mallory.query("CREATE TRIGGER queued BEFORE INSERT OR UPDATE ON user_groups_run_lease_waiters FOR EACH ROW EXECUTE FUNCTION queued()");
    const lease = new PostgresLeaseStore(db.fleetUrl, "user-groups", "queued", { rules: leaseRules() });
    try {
      const refusal = await lease.tryAcquire({ runId: "r", host: "h", pid: 1, startedAt: Date.now(), renewedAt: Date.now() }).then(() => undefined, (error: unknown) => error);
      expect(refusal).toBeInstanceOf(BackendTableUntrustedError);
      expect(refusal).toMatchObject({ code: "backend_table_untrusted", table: "user_groups_run_lease_waiters" });
      expect((refusal as Error).message).toMatch(/"user_groups_run_lease_waiters".*owned by role "mallory"/);
    } finally {
      await lease.close();
    }
    expect((await mallory.query("SELECT * FROM marker")).rows).toEqual([]);
    // Our own waiters table, made by the lease itself in a fresh database, passes: the lease is taken.
    const clean = await freshDatabase();
    const ours = new PostgresLeaseStore(clean.fleetUrl, "user-groups", "queued", { rules: leaseRules() });
    try {
      expect((await ours.tryAcquire({ runId: "r", host: "h", pid: 1, startedAt: Date.now(), renewedAt: Date.now() })).acquired).toBe(true);
    } finally {
      await ours.close();
    }
    await mallory.end();
  });
});
