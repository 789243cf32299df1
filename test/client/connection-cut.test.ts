// Issue 32 (found by the fault histories, testkit/jepsen/fault-kinds.ts): a
// replica whose connection to PostgreSQL was cut (Toxiproxy reset_peer, a black
// hole past the query timeout, the server ending the session) got the pg
// driver's bare `Error: Connection terminated unexpectedly`, with no code, which
// neither a caller nor the checker (testkit/jepsen/retryable.ts) can tell is
// retryable. Every store of ours on PostgreSQL (client/shared-state
// PostgresSession: the run lease, the shard directory, the rate budget) now turns
// such an error into its own coded, retryable one naming the store and never the
// password, and opens a new session on next use; the run lease tries a cut
// statement once more itself, so that one cut costs a retry, not a caller's error.
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresLeaseStore } from "../../provider/backends/postgres/lease-store";
import { leaseRules } from "../../provider/automation/lease/record";
import { SLOT_RULES } from "../../provider/client/rate-budget/budget";
import { PostgresShardDirectory } from "../../provider/backends/postgres/directory-store";
import { PostgresSlotStore } from "../../provider/backends/postgres/slot-store";
import { isConnectionLost, PostgresSession } from "../../provider/backends/postgres";
import { UserGroupsError } from "../../provider/wire/errors";
import { isRetryableError } from "../../testkit/jepsen/retryable";
import { startToxiproxy, type Toxiproxy } from "../../testkit/jepsen/toxiproxy";
import { startPostgres, type PostgresServer } from "../../testkit/postgres";
import { waitFor } from "../support/wait-for";

const PASSWORD = "cut-Pa55word-xyz";
let postgres: PostgresServer;
let admin: Client;
let url: string;

beforeAll(async () => {
  postgres = await startPostgres({ password: PASSWORD });
  url = `postgres://postgres:${PASSWORD}@127.0.0.1:${postgres.port}/postgres?sslmode=disable`;
  admin = new Client({ connectionString: url, application_name: "cut-test admin" });
  admin.on("error", () => undefined);
  await admin.connect();
});
afterAll(async () => {
  await admin?.end().catch(() => undefined);
  postgres?.stop();
});

/** Pids of the sessions whose application_name starts with `prefix`. */
async function sessionsOf(prefix: string, state?: "waiting"): Promise<number[]> {
  const result = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE left(application_name, length($1)) = $1 AND pid <> pg_backend_pid() ${state === "waiting" ? "AND (wait_event_type = 'Lock' OR wait_event = 'PgSleep')" : ""}`,
    [prefix],
  );
  return result.rows.map((row) => row.pid);
}

/** Ends the sessions (pg_terminate_backend) once one of them is waiting in a statement (or at once without `waiting`). */
async function cut(prefix: string, waiting = true): Promise<void> {
  await waitFor(async () => (await sessionsOf(prefix, waiting ? "waiting" : undefined)).length > 0, { timeoutMs: 15_000, what: `a session ${prefix}` });
  for (const pid of await sessionsOf(prefix)) await admin.query("SELECT pg_terminate_backend($1)", [pid]);
}

function expectCoded(error: unknown, code: string, store: RegExp): void {
  expect(error).toBeInstanceOf(UserGroupsError);
  expect(error).toMatchObject({ code });
  expect(isRetryableError(error as UserGroupsError), code).toBe(code !== "rate_budget_unreachable" ? true : false);
  const message = String((error as Error).message);
  expect(message).toMatch(store);
  expect(message).not.toContain(PASSWORD);
}

describe("a PostgreSQL session cut under a statement", () => {
  it("tells a cut (no SQLSTATE, socket codes, class 08, 57P01-57P03) from a statement's own error", () => {
    expect(isConnectionLost(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isConnectionLost(new Error("Query read timeout"))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error("the database system is starting up"), { code: "57P03" }))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error("connection failure"), { code: "08006" }))).toBe(true);
    expect(isConnectionLost(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
    expect(isConnectionLost(Object.assign(new Error("permission denied"), { code: "42501" }))).toBe(false);
    expect(isConnectionLost(new TypeError("x is not a function"))).toBe(false);
  });

  it("the server ends it (pg_terminate_backend): the store's coded error, without the password; the next use has a new session", async () => {
    const session = new PostgresSession({
      connectionString: url,
      applicationName: "cut-test store",
      unreachable: (_error, detail, during) => new UserGroupsError("backend_unreachable", `the test store (${during}): ${detail}`),
    });
    try {
      const first = await session.connection();
      const pid = (await first.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const slow = first.query("SELECT pg_sleep(30)").then(() => undefined, (error: unknown) => error);
      await cut("cut-test store");
      const error = await slow;
      expectCoded(error, "backend_unreachable", /the test store \(query\): its connection was cut/);
      // Discarded, not left broken: the next use opens a new session, which works.
      expect(session.current).toBeUndefined();
      const again = (await (await session.connection()).query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      expect(again).not.toBe(pid);
    } finally {
      await session.close();
    }
  });

  it("a query that outlasts the query timeout (a black hole's end) is a cut too: coded, the session discarded", async () => {
    const session = new PostgresSession({
      connectionString: url,
      applicationName: "cut-test timeout",
      queryTimeoutMs: 300,
      unreachable: (_error, detail) => new UserGroupsError("backend_unreachable", `the test store: ${detail}`),
    });
    try {
      const error = await (await session.connection()).query("SELECT pg_sleep(3)").then(() => undefined, (e: unknown) => e);
      expectCoded(error, "backend_unreachable", /Query read timeout/);
      expect((await (await session.connection()).query<{ one: number }>("SELECT 1 AS one")).rows[0]!.one).toBe(1);
    } finally {
      await session.close();
    }
  });

  it("the run lease: a cut under acquire is tried once more by itself; a cut lease session keeps a lease that is still ours", async () => {
    const store = new PostgresLeaseStore(url, "user-groups", "cut", { rules: leaseRules() });
    const me = (runId: string) => ({ runId, host: "pod-a", pid: process.pid, startedAt: Date.now(), renewedAt: Date.now() });
    try {
      // Make the tables and the row, then hold the row so that the next acquire waits in its statement.
      const made = await store.tryAcquire(me("run-0"));
      expect(made.acquired).toBe(true);
      await store.release((made as { record: Parameters<PostgresLeaseStore["release"]>[0] }).record);
      await admin.query("BEGIN");
      await admin.query("SELECT 1 FROM user_groups_run_leases WHERE stack_key = 'user-groups/cut' FOR UPDATE");
      const acquiring = store.tryAcquire(me("run-1"));
      await cut("ug-lease:");
      await new Promise((resolve) => setTimeout(resolve, 200));
      await admin.query("COMMIT");
      const outcome = await acquiring;
      expect(outcome.acquired).toBe(true);
      const record = (outcome as { record: Parameters<PostgresLeaseStore["release"]>[0] }).record;

      // The lease session is ended while idle: the lease is still ours (epoch, unexpired), so it is neither lost nor given up.
      let lost = false;
      store.onLost = () => void (lost = true);
      await cut("ug-lease:", false);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(lost).toBe(false);
      expect(await store.write({ ...record, renewedAt: Date.now() })).toBe(true);
      // Its new session carries the epoch again: a successor sees the holder is there.
      await waitFor(async () => (await sessionsOf(`ug-lease:`)).length === 1 && (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'ug-lease:%:${record.epoch}'`)).rowCount === 1, {
        timeoutMs: 5_000,
        what: "the renamed lease session",
      });
      await store.release(record);
    } finally {
      await admin.query("ROLLBACK").catch(() => undefined);
      await store.close();
    }
  });

  it("the shard directory and the rate budget: a cut statement is their own coded error; the next call works", async () => {
    const directory = new PostgresShardDirectory(url, "user-groups", "cut-dir");
    const budget = new PostgresSlotStore(url, undefined, SLOT_RULES);
    try {
      await directory.assign(() => new Map([["default.a", 0]]));
      await budget.book("cut-budget", 10);
      await admin.query("BEGIN");
      await admin.query("LOCK TABLE user_groups_shard_members, user_groups_rate_budget IN ACCESS EXCLUSIVE MODE");
      const reading = directory.read().then(() => undefined, (e: unknown) => e);
      const booking = budget.book("cut-budget", 10).then(() => undefined, (e: unknown) => e);
      await cut("pulumi-user-groups shards");
      await cut("pulumi-user-groups rate budget");
      await admin.query("COMMIT");
      expectCoded(await reading, "backend_unreachable", /its connection was cut .*\(the shard directory\)/);
      expectCoded(await booking, "rate_budget_unreachable", /rate budget \(its connection was cut/);
      expect([...(await directory.read()).keys()]).toEqual(["default.a"]);
      expect(await budget.book("cut-budget", 10)).toBeGreaterThanOrEqual(0);
    } finally {
      await admin.query("ROLLBACK").catch(() => undefined);
      await directory.close();
      await budget.close();
    }
  });

  describe.skipIf(process.platform !== "linux")("through a real fault proxy (Toxiproxy)", () => {
    let toxiproxy: Toxiproxy;
    let proxied: string;
    beforeAll(async () => {
      toxiproxy = await startToxiproxy();
      const port = await toxiproxy.proxy("cut", `127.0.0.1:${postgres.port}`);
      proxied = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres?sslmode=disable`;
    }, 120_000);
    afterAll(async () => {
      await toxiproxy?.stop();
    });

    it("reset_peer: the run lease's statements fail coded and retryable while it lasts, and serve again once healed", async () => {
      const store = new PostgresLeaseStore(proxied, "user-groups", "cut-proxy", { rules: leaseRules() });
      const directory = new PostgresShardDirectory(proxied, "user-groups", "cut-proxy");
      try {
        const outcome = await store.tryAcquire({ runId: "run-p", host: "pod-a", pid: process.pid, startedAt: Date.now(), renewedAt: Date.now() });
        expect(outcome.acquired).toBe(true);
        const record = (outcome as { record: Parameters<PostgresLeaseStore["release"]>[0] }).record;
        await directory.assign(() => new Map([["default.p", 0]]));
        await toxiproxy.partition("cut", "reset");
        const renewal = await store.write({ ...record, renewedAt: Date.now() }).then(() => undefined, (e: unknown) => e);
        expectCoded(renewal, "run_lease_unreachable", /run lease/);
        expectCoded(await directory.read().then(() => undefined, (e: unknown) => e), "backend_unreachable", /shard directory/);
        await toxiproxy.heal("cut");
        expect(await store.write({ ...record, renewedAt: Date.now() })).toBe(true);
        expect([...(await directory.read()).keys()]).toEqual(["default.p"]);
        await store.release(record);
      } finally {
        await toxiproxy.heal("cut").catch(() => undefined);
        await store.close();
        await directory.close();
      }
    });
  });
});
