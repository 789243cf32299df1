// The run lease (provider/automation/lease/run-lease.ts) and the pure parts of the
// takeover (takeover.ts) and of the provider's engine watchdog: decisions with
// injected clocks, hosts and pids; the file and PostgreSQL stores for real.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireRunLease } from "../../../provider/automation/lease/run-lease";
import { Client } from "pg";
import { PostgresLeaseStore } from "../../../provider/backends/postgres/lease-store";
import { leaseIdOf } from "../../../provider/backends/postgres/lease-tables";
import { PostgresRunFence } from "../../../provider/backends/postgres/run-fence";
import { RunFencedError } from "../../../provider/backends/backend";
import { BackendTableNameError, postgresTarget } from "../../../provider/backends/postgres/target";
import { classifyLockHolder, type Here, LEASE_TTL_MS, leaseRules, leaseStateOf, parseRunRecord, type RunClaim, type RunRecord, successorRecord } from "../../../provider/automation/lease/record";
import { FileLeaseStore } from "../../../provider/backends/file/lease-store";
import { StackLockedError } from "../../../provider/automation/backend/lock-wait";
import { adoptingSpec, mergeAdopt, pendingCreatesOf, waitUntilQuiet } from "../../../provider/automation/engine/takeover";
import { engineAddressOf, isDynamicProviderProcess, type ProbeResult, startEngineWatchdog } from "../../../provider/resource/engine-watchdog";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { clockWith } from "../../../provider/clock";
import { fakeClock } from "../../support/fake-clock";

const T0 = Date.parse("2026-11-24T10:00:00Z");

function claim(over: Partial<RunClaim> = {}): RunClaim {
  return { runId: "run-1", host: "pod-a", pid: 4711, startedAt: T0, renewedAt: T0 + 10_000, ...over };
}

function record(over: Partial<RunRecord> = {}): RunRecord {
  return { version: 1, ...claim(), expiresAt: T0 + 10_000 + LEASE_TTL_MS, released: false, unfinished: [], adopt: [], ...over };
}

function here(host: string, alive: readonly number[] = [], pulumi: readonly number[] = []): Here {
  return { host, pidAlive: (pid) => alive.includes(pid), pulumiRunning: (pid) => pulumi.includes(pid) };
}

describe("lease decisions", () => {
  it("a released file lease is free; another host's holder is live even past its expiry (nothing fences it: a person decides)", () => {
    expect(leaseStateOf(undefined, T0, here("pod-b"))).toBe("free");
    expect(leaseStateOf(record({ released: true }), T0, here("pod-b"))).toBe("free");
    const held = record();
    expect(leaseStateOf(held, held.expiresAt - 1, here("pod-b"))).toBe("live");
    expect(leaseStateOf(held, held.expiresAt, here("pod-b"))).toBe("live");
    expect(leaseStateOf(held, held.expiresAt + 3_600_000, here("pod-b"))).toBe("live");
  });

  it("on the holder's own host a dead pid ends the file lease at once; a live pid holds it, expired or not", () => {
    const held = record();
    expect(leaseStateOf(held, T0 + 11_000, here("pod-a"))).toBe("dead");
    expect(leaseStateOf(held, T0 + 11_000, here("pod-a", [4711]))).toBe("live");
    expect(leaseStateOf(held, held.expiresAt, here("pod-a", [4711]))).toBe("live");
  });

  it("a Pulumi lock taken while a run with an epoch (PostgreSQL) held the lease is fenced, even while its pid runs", () => {
    const lock = { key: "k", pid: 777, hostname: "pod-a", timestamp: new Date(T0 + 2_000).toISOString() };
    const fencedClaim = claim({ epoch: 4 });
    expect(classifyLockHolder(lock, here("pod-a", [777], [777]), [fencedClaim])).toEqual({ verdict: "fenced", claim: fencedClaim });
    expect(classifyLockHolder(lock, here("pod-b"), [fencedClaim])).toEqual({ verdict: "fenced", claim: fencedClaim });
    // Without an epoch (a file backend), the live pid still decides.
    expect(classifyLockHolder(lock, here("pod-a", [777], [777]), [claim()]).verdict).toBe("live");
  });

  it("a new holder inherits a dead holder as unfinished business, and its adopt list; a released one adds nothing", () => {
    const me = claim({ runId: "run-2", host: "pod-b", pid: 9, startedAt: T0 + 60_000, renewedAt: T0 + 60_000 });
    const adopt = [{ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme" } }];
    const afterDead = successorRecord(record({ adopt, unfinished: [claim({ runId: "run-0" })] }), me);
    expect(afterDead).toMatchObject({ runId: "run-2", host: "pod-b", released: false, adopt });
    expect(afterDead.unfinished.map((c) => c.runId)).toEqual(["run-0", "run-1"]);
    expect(afterDead.expiresAt).toBe(T0 + 60_000 + LEASE_TTL_MS);
    expect(successorRecord(record({ released: true }), me).unfinished).toEqual([]);
  });

  it("a record that is not one (junk, wrong version, oversized lists) decides nothing", () => {
    expect(parseRunRecord("{")).toBeUndefined();
    expect(parseRunRecord(JSON.stringify({ ...record(), version: 2 }))).toBeUndefined();
    expect(parseRunRecord(JSON.stringify({ ...record(), unfinished: Array.from({ length: 1001 }, () => claim()) }))).toBeUndefined();
    expect(parseRunRecord(JSON.stringify(record()))).toEqual(record());
  });
});

describe("who holds Pulumi's lock", () => {
  const lock = { key: "k", pid: 777, hostname: "pod-a", timestamp: new Date(T0 + 2_000).toISOString() };

  it("same host: a live pulumi process is live; a dead pid, or one reused by another program, is gone", () => {
    expect(classifyLockHolder(lock, here("pod-a", [777], [777]), []).verdict).toBe("live");
    expect(classifyLockHolder(lock, here("pod-a", [777], []), []).verdict).toBe("gone");
    expect(classifyLockHolder(lock, here("pod-a"), [claim()])).toEqual({ verdict: "gone", claim: claim() });
  });

  it("another host: gone only when a dead run of ours on that host held the lease when the lock was taken", () => {
    const me = here("pod-b");
    expect(classifyLockHolder(lock, me, [])).toEqual({ verdict: "unknown" });
    expect(classifyLockHolder(lock, me, [claim()])).toEqual({ verdict: "gone", claim: claim() });
    // A run on another host, or one whose lease began after (or ended well before) the lock was taken, proves nothing.
    expect(classifyLockHolder(lock, me, [claim({ host: "pod-c" })]).verdict).toBe("unknown");
    expect(classifyLockHolder(lock, me, [claim({ startedAt: T0 + 3_000 })]).verdict).toBe("unknown");
    expect(classifyLockHolder({ ...lock, timestamp: new Date(T0 + 60_000).toISOString() }, me, [claim()]).verdict).toBe("unknown");
    expect(classifyLockHolder({ key: "k", pid: 777, hostname: "pod-a" }, me, [claim()]).verdict).toBe("unknown");
  });
});

describe("the adopt list", () => {
  const deployment = {
    pending_operations: [
      { type: "creating", resource: { urn: "urn:pulumi:s::user-groups::pulumi-nodejs:dynamic:UserGroup::default.acme", type: "pulumi-nodejs:dynamic:UserGroup", inputs: { name: "Acme", userGroupId: "acme", __provider: "x" } } },
      { type: "updating", resource: { urn: "urn:pulumi:s::user-groups::pulumi-nodejs:dynamic:UserGroup::default.beta", type: "pulumi-nodejs:dynamic:UserGroup", inputs: {} } },
    ],
  };

  it("holds each pending create with its inputs, newer inputs winning over a recorded entry", () => {
    const pending = pendingCreatesOf(deployment);
    expect(pending).toEqual([{ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme", __provider: "x" } }]);
    const merged = mergeAdopt([{ resourceName: "default.acme", inputs: { name: "Old" } }, { resourceName: "default.zed", inputs: {} }], pending);
    expect(merged.map((e) => [e.resourceName, e.inputs["name"]])).toEqual([["default.acme", "Acme"], ["default.zed", undefined]]);
  });

  it("adopts a group only as itself: inputs naming another group, or invalid ones, adopt nothing", () => {
    expect(adoptingSpec({ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme", __provider: "x" } })).toEqual({ name: "Acme", userGroupId: "acme", adoptExisting: true });
    expect(adoptingSpec({ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "other" } })).toBeUndefined();
    expect(adoptingSpec({ resourceName: "default.acme", inputs: { userGroupId: "acme" } })).toBeUndefined();
  });
});

describe("waiting until a dead run can send nothing more", () => {
  function clock() {
    return fakeClock({ start: T0 });
  }

  it("on this host: until its processes are gone; stragglers past the grace period are killed", async () => {
    const c = clock();
    let running = [101, 102];
    const killed: number[] = [];
    const count = await waitUntilQuiet([claim({ host: "pod-a" })], 0, T0, {
      here: here("pod-a"),
      graceMs: 1_000,
      clock: c,
      processesOf: (ids) => (ids.includes("run-1") ? running : []),
      kill: (pid) => {
        killed.push(pid);
        running = running.filter((p) => p !== pid);
      },
    });
    expect(killed).toEqual([101, 102]);
    expect(count).toBe(2);
    expect(c.now() - T0).toBeGreaterThanOrEqual(1_000);
  });

  it("another host's run, or a dead lock no run of ours claims: a quiet period from when it was found dead", async () => {
    const c = clock();
    await waitUntilQuiet([claim({ host: "pod-a" })], 0, T0, { here: here("pod-b"), quietMs: 5_000, clock: c, processesOf: () => [] });
    expect(c.now() - T0).toBe(5_000);
    const d = clock();
    await waitUntilQuiet([], 1, T0 - 2_000, { here: here("pod-b"), quietMs: 5_000, clock: d, processesOf: () => [] });
    expect(d.now() - T0).toBe(3_000);
  });
});

describe("the file lease", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "run-lease-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("one holder at a time; a dead holder's lease (same host, pid dead) is taken at once and its claim inherited", async () => {
    let now = T0;
    const clock = clockWith({ now: () => now });
    const a = new FileLeaseStore(dir, "user-groups", "prod", { rules: leaseRules(here("pod-a", [process.pid])), clock });
    const b = new FileLeaseStore(dir, "user-groups", "prod", { rules: leaseRules(here("pod-a", [])), clock });
    const leaseA = await acquireRunLease(a, "prod", { here: here("pod-a", [process.pid]), clock });
    const leasesDir = path.join(dir, ".user-groups", "leases", "user-groups", "prod");
    expect(statSync(leasesDir).mode & 0o777).toBe(0o700);
    for (const name of readdirSync(leasesDir)) expect(statSync(path.join(leasesDir, name)).mode & 0o777).toBe(0o600);
    // Seen from a process that finds this pid alive: held.
    // (A store that was refused waits in the lease's queue until it closes, or for FILE_WAITER_STALE_MS.)
    const refused = new FileLeaseStore(dir, "user-groups", "prod", { rules: leaseRules(here("pod-a", [process.pid])), clock });
    await expect(acquireRunLease(refused, "prod")).rejects.toBeInstanceOf(StackLockedError);
    await refused.close();
    // Seen as dead (B's view): taken, and A becomes unfinished business.
    now += 1_000;
    const leaseB = await acquireRunLease(b, "prod", { here: here("pod-a", []), clock });
    expect(leaseB.current.unfinished.map((c) => c.runId)).toEqual([leaseA.runId]);
    // A finds out on its next write: the lease is no longer its own.
    await leaseA.update({});
    expect(leaseA.lost).toBe(true);
    await leaseA.release();
    await leaseB.release();
    // Released: the next holder inherits nothing new.
    const leaseC = await acquireRunLease(b, "prod", { here: here("pod-a", []), clock });
    expect(leaseC.current.unfinished.map((c) => c.runId)).toEqual([leaseA.runId]);
    await leaseC.release();
  });

  it("another host's holder is never taken over, not even long past its expiry: nothing could fence its late writes", async () => {
    let now = T0;
    const clock = clockWith({ now: () => now });
    const podA = new FileLeaseStore(dir, "user-groups", "other", { rules: leaseRules(here("pod-a", [process.pid])), clock });
    const podB = new FileLeaseStore(dir, "user-groups", "other", { rules: leaseRules(here("pod-b")), clock });
    const leaseA = await acquireRunLease(podA, "other", { here: here("pod-a", [process.pid]), clock });
    now += LEASE_TTL_MS - 1;
    await expect(acquireRunLease(podB, "other", { here: here("pod-b"), clock })).rejects.toThrow(/locked/);
    now += 3_600_000;
    await expect(acquireRunLease(podB, "other", { here: here("pod-b"), clock })).rejects.toThrow(/locked/);
    // A person who knows A is gone breaks the lease (`recover --break-lease`): A is inherited as a dead run.
    const leaseB = await acquireRunLease(podB, "other", { here: here("pod-b"), clock, breakLive: true });
    expect(leaseB.current.unfinished).toEqual([expect.objectContaining({ runId: leaseA.runId, host: "pod-a" })]);
    await leaseA.update({});
    expect(leaseA.lost).toBe(true);
    await leaseB.release();
    await leaseA.release();
  });

  it("reads the stack's Pulumi locks and removes one with its sidecar", async () => {
    const lockDir = path.join(dir, ".pulumi", "locks", "organization", "user-groups", "locked");
    mkdirSync(lockDir, { recursive: true });
    const file = path.join(lockDir, "abc.json");
    writeFileSync(file, JSON.stringify({ pid: 12, hostname: "pod-z", timestamp: "2026-11-24T10:00:00Z" }));
    writeFileSync(`${file}.attrs`, "{}");
    const store = new FileLeaseStore(dir, "user-groups", "locked", { rules: leaseRules() });
    const [lock] = await store.pulumiLocks();
    expect(lock).toEqual({ key: file, pid: 12, hostname: "pod-z", timestamp: "2026-11-24T10:00:00Z" });
    await store.removePulumiLock(lock!);
    expect(readdirSync(lockDir)).toEqual([]);
  });
});

describe("the PostgreSQL lease", () => {
  it("names its tables and keys from the backend URL; a table name that is not a plain SQL name is refused", () => {
    expect(postgresTarget("postgres://u:p@db:5432/state?sslmode=disable&table=pulumi.stacks")).toEqual({
      connectionString: "postgres://u:p@db:5432/state?sslmode=disable&uselibpqcompat=true",
      pulumiTable: "pulumi.stacks",
      recordTable: "pulumi.user_groups_run_records",
      leaseTable: "pulumi.user_groups_run_leases",
      waiterTable: "pulumi.user_groups_run_lease_waiters",
      keyPrefix: "state/",
    });
    for (const table of ["x;drop table y", "a b", "x.y.z", "\"x\""]) {
      expect(() => postgresTarget(`postgres://db/state?table=${encodeURIComponent(table)}`)).toThrow(BackendTableNameError);
    }
    // Unset, the SSL mode is lib/pq's (Pulumi's driver) default: require.
    expect(postgresTarget("postgres://u:p@db/state").connectionString).toBe("postgres://u:p@db/state?sslmode=require&uselibpqcompat=true");
    expect(leaseIdOf("pulumi_state", "user-groups", "prod")).toMatch(/^[0-9a-f]{16}$/);
    expect(leaseIdOf("pulumi_state", "user-groups", "prod")).not.toBe(leaseIdOf("pulumi_state", "user-groups", "prod2"));
  });

  it("an unreachable backend is a UserGroupsError that does not repeat the URL's password", async () => {
    const store = new PostgresLeaseStore("postgres://lease-user:s3cret-Pa55word@127.0.0.1:1/state?sslmode=disable", "user-groups", "prod", { rules: leaseRules() });
    const error = await acquireRunLease(store, "prod").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "run_lease_unreachable" });
    expect(String((error as Error).message)).not.toContain("s3cret-Pa55word");
    await store.close();
  });

  describe("on a real server", () => {
    let postgres: PostgresServer;
    beforeAll(async () => {
      postgres = await startPostgres();
    });
    afterAll(() => postgres?.stop());

    it("a lease row with an epoch: held while renewed, free the moment its holder's session ends, the dead holder inherited", async () => {
      const a = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "prod", { rules: leaseRules() });
      const b = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "prod", { rules: leaseRules() });
      const other = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "staging", { rules: leaseRules() });
      try {
        const leaseA = await acquireRunLease(a, "prod", { here: here("pod-a") });
        const refused = await acquireRunLease(b, "prod", { here: here("pod-b") }).catch((error: Error) => error);
        expect(refused).toBeInstanceOf(StackLockedError);
        expect(String((refused as Error & { cause?: Error }).cause?.message)).toContain('on host "pod-a"');
        // Another stack's lease is its own.
        await (await acquireRunLease(other, "staging", { here: here("pod-b") })).release();
        // The holder's connection ends (a killed process): the lease is free at once, A is unfinished business, fenced by its epoch.
        await a.close();
        const leaseB = await acquireRunLease(b, "prod", { here: here("pod-b") });
        expect(leaseB.current.unfinished).toEqual([expect.objectContaining({ runId: leaseA.runId, epoch: leaseA.epoch })]);
        expect(leaseB.epoch).toBe(leaseA.epoch! + 1);
        await leaseB.update({ adopt: [{ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme" } }] });
        await leaseB.release();
        const leaseC = await acquireRunLease(a, "prod", { here: here("pod-c") });
        expect(leaseC.current.adopt.map((e) => e.resourceName)).toEqual(["default.acme"]);
        expect(leaseC.current.unfinished.map((c) => c.runId)).toEqual([leaseA.runId]);
        await leaseC.release();
      } finally {
        await Promise.all([a.close(), b.close(), other.close()]);
      }
    });

    it("expires by the database's clock while the holder's connection lives; then the old epoch is fenced: no renewal, no checkpoint write, no request", async () => {
      const timing = { ttlMs: 1_500, renewEveryMs: 500 };
      const a = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "paused", { rules: leaseRules(), timing });
      const b = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "paused", { rules: leaseRules(), timing });
      const target = postgresTarget(postgres.backendUrl);
      const leaseId = leaseIdOf(target.pulumiTable, "user-groups", "paused");
      const engine = (epoch: number | undefined) =>
        new Client({ connectionString: postgres.backendUrl, ...(epoch !== undefined ? { application_name: `ug-run:${leaseId}:${epoch}` } : {}) });
      const write = async (epoch: number | undefined, key: string) => {
        const client = engine(epoch);
        await client.connect();
        try {
          await client.query(`INSERT INTO pulumi_state (key, data) VALUES ($1, '{"data":""}') ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data`, [key]);
        } finally {
          await client.end();
        }
      };
      const fence = (epoch: number) => new PostgresRunFence(target.connectionString, target.leaseTable, leaseId, epoch, clockWith({ sleep: async () => undefined }));
      const me = (runId: string) => ({ runId, host: "pod-a", pid: process.pid, startedAt: Date.now(), renewedAt: Date.now() });
      try {
        const first = await a.tryAcquire(me("run-a"));
        expect(first.acquired).toBe(true);
        const recordA = (first as { record: RunRecord }).record;
        // A holds it (its session lives, it just does not renew: paused).
        expect((await b.tryAcquire(me("run-b"))).acquired).toBe(false);
        await write(recordA.epoch, "postgres/.pulumi/stacks/user-groups/paused.json");
        // A live run's fence lets its requests through only while the lease lives FENCE_MARGIN_MS more.
        await expect(fence(recordA.epoch!).check()).rejects.toMatchObject({ code: "run_fenced" });
        await new Promise((resolve) => setTimeout(resolve, 1_700));
        const second = await b.tryAcquire(me("run-b"));
        expect(second.acquired).toBe(true);
        const recordB = (second as { record: RunRecord }).record;
        expect(recordB.epoch).toBe(recordA.epoch! + 1);
        expect(recordB.unfinished).toEqual([expect.objectContaining({ runId: "run-a", epoch: recordA.epoch })]);
        // A's session was ended by B; A's renewal finds the lease gone.
        expect(await a.write(recordA).catch(() => false)).toBe(false);
        // The fence on Pulumi's table: A's engine (its epoch in application_name) can write nothing, even through a new connection.
        await expect(write(recordA.epoch, "postgres/.pulumi/stacks/user-groups/paused.json")).rejects.toThrow(/run_fenced/);
        await expect(write(recordA.epoch, "postgres/.pulumi/locks/user-groups/paused/x.json")).rejects.toThrow(/run_fenced/);
        await write(recordB.epoch, "postgres/.pulumi/stacks/user-groups/paused.json");
        // Sessions that are not a run's engine (a person's pulumi, our lease session) are not refused.
        await write(undefined, "postgres/.pulumi/stacks/user-groups/other.json");
        // A's provider processes are fenced; B's are not (its lease has its whole TTL left... shorter than the margin here).
        await expect(fence(recordA.epoch!).check()).rejects.toBeInstanceOf(RunFencedError);
        await b.release(recordB);
        // Released: the epoch's engine is refused too.
        await expect(write(recordB.epoch, "postgres/.pulumi/stacks/user-groups/paused.json")).rejects.toThrow(/run_fenced/);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it("a provider process's fence passes while its run's lease is current and lives past the margin", async () => {
      const store = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "fenced", { rules: leaseRules() });
      const target = postgresTarget(postgres.backendUrl);
      const leaseId = leaseIdOf(target.pulumiTable, "user-groups", "fenced");
      try {
        const lease = await acquireRunLease(store, "fenced", { here: here("pod-a") });
        const env = store.fenceEnv(lease.current)!;
        expect(env.PULUMI_BACKEND_URL).toContain(`application_name=ug-run:${leaseId}:${lease.epoch}`);
        expect(env.USER_GROUPS_RUN_FENCE).toBe(`${leaseId}:${lease.epoch}`);
        const fence = new PostgresRunFence(target.connectionString, target.leaseTable, leaseId, lease.epoch!, clockWith({ sleep: async () => undefined }));
        await fence.check();
        await expect(new PostgresRunFence(target.connectionString, target.leaseTable, leaseId, lease.epoch! + 1, clockWith({ sleep: async () => undefined })).check()).rejects.toMatchObject({
          code: "run_fenced",
        });
        await lease.release();
        await expect(fence.check()).rejects.toMatchObject({ code: "run_fenced" });
        await fence.close();
      } finally {
        await store.close();
      }
    });

    it("asks one statement at a time on its session: a fleet's peeks beside renewals and lock reads never overlap (pg's deprecated queueing, a transaction interleaved)", async () => {
      const store = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "peeked", { rules: leaseRules(), timing: { ttlMs: 1_500, renewEveryMs: 20 } });
      const inFlight = new Map<object, number>();
      let overlapped = 0;
      let asked = 0;
      const query = Client.prototype.query;
      // Counts each client's statements under way (the store's clients are pg's, this module's).
      Client.prototype.query = function (this: Client, ...args: unknown[]) {
        const now = (inFlight.get(this) ?? 0) + 1;
        inFlight.set(this, now);
        asked++;
        if (now > 1) overlapped++;
        const settled = () => inFlight.set(this, (inFlight.get(this) ?? 1) - 1);
        const result = (query as (...a: unknown[]) => unknown).apply(this, args);
        if (result instanceof Promise) result.then(settled, settled);
        else settled();
        return result;
      } as typeof query;
      try {
        const lease = await acquireRunLease(store, "peeked", { here: here("pod-a") });
        // Peeks and lock reads while the lease renews every 20 ms (what a fleet's list() does beside its own runs).
        for (let round = 0; round < 5; round++) {
          const records = await Promise.all([...Array.from({ length: 10 }, () => store.peek()), store.pulumiLocks().then(() => undefined)]);
          expect(records.slice(0, 10).every((record) => record?.runId === lease.runId)).toBe(true);
        }
        await lease.release();
        expect(asked).toBeGreaterThan(50);
        expect(overlapped).toBe(0);
      } finally {
        Client.prototype.query = query;
        await store.close();
      }
    });
  });
});

describe("the provider's engine watchdog", () => {
  it("finds the engine's address among the dynamic provider's arguments, and knows that process", () => {
    const argv = ["/usr/bin/node", "/w/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js", "127.0.0.1:44185"];
    expect(engineAddressOf(argv)).toEqual({ host: "127.0.0.1", port: 44185 });
    expect(isDynamicProviderProcess(argv)).toBe(true);
    expect(isDynamicProviderProcess(["/usr/bin/node", "/w/node_modules/vitest/vitest.mjs", "run"])).toBe(false);
    expect(engineAddressOf(["node", "x.js", "--logtostderr"])).toBeUndefined();
  });

  it("gives up on the engine after two refusals in a row, or at once when reparented; an answer in between resets", async () => {
    const answers: ProbeResult[] = ["down", "up", "down", "down"];
    const why = await new Promise<string>((resolve) => {
      startEngineWatchdog({ address: { host: "127.0.0.1", port: 1 }, everyMs: 5, ppid: () => 10, probe: async () => answers.shift() ?? "up", onEngineGone: resolve });
    });
    expect(answers).toEqual([]);
    expect(why).toMatch(/no longer answers/);
    let parent = 10;
    const reparented = new Promise<string>((resolve) => {
      startEngineWatchdog({ address: undefined, everyMs: 5, ppid: () => parent, onEngineGone: resolve });
    });
    parent = 1;
    expect(await reparented).toMatch(/pid 10\) is gone/);
  });
});
