// The PostgreSQL run lease serves its waiters first come (issue #32, bounded outage):
// found by the fault histories (test/jepsen/), where a fresh sign-up on an unloaded
// replica waited up to 78 s after a paused holder's lease expired, because the
// replicas that always had work won the race for the lease again and again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "pg";
import { PostgresLeaseStore } from "../../../provider/backends/postgres/lease-store";
import { leaseRules, type RunClaim, type RunRecord } from "../../../provider/automation/lease/record";
import { postgresTarget } from "../../../provider/backends/postgres/target";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";

let postgres: PostgresServer;
const stores: PostgresLeaseStore[] = [];
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  await postgres?.stop();
});

const claim = (runId: string): RunClaim => ({ runId, host: "here", pid: process.pid, startedAt: Date.now(), renewedAt: Date.now() });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Nobody renews in these tests (no RunLease): a holder is "paused" from the start, its lease lives ttlMs.
const TIMING = { ttlMs: 1_500, renewEveryMs: 60_000 };

let replicas = 0;
/** A lease store as a replica of its own would have it (a waiter is a process: each store here plays another, unless `waiterId` says which). */
function store(stack: string, waiterStaleMs = 3_000, waiterId = `replica-${++replicas}`): PostgresLeaseStore {
  const s = new PostgresLeaseStore(postgres.backendUrl, "user-groups", stack, { rules: leaseRules(), timing: TIMING, waiterStaleMs, waiterId });
  stores.push(s);
  return s;
}

/** Tries every `everyMs` until the lease is taken (or `deadline`); the time it was taken and the record. */
async function waitFor(s: PostgresLeaseStore, name: string, everyMs: number, deadline: number): Promise<{ at: number; record: RunRecord } | undefined> {
  while (Date.now() < deadline) {
    const outcome = await s.tryAcquire(claim(name));
    if (outcome.acquired) return { at: Date.now(), record: outcome.record };
    await sleep(everyMs);
  }
  return undefined;
}

describe.skipIf(process.platform === "win32")("the PostgreSQL lease's waiters", () => {
  it("are served in the order they began to wait, however often later ones try", async () => {
    const stack = "fair-order";
    const holder = store(stack);
    expect((await holder.tryAcquire(claim("holder"))).acquired).toBe(true);
    // A begins to wait, then B, then C. A tries seldom (a replica with one sign-up, backing off), B and C all the time.
    const [a, b, c] = [store(stack), store(stack), store(stack)];
    for (const w of [a, b, c]) {
      expect((await w.tryAcquire(claim("first-try"))).acquired).toBe(false);
      await sleep(20);
    }
    const deadline = Date.now() + 15_000;
    const order: string[] = [];
    // Each takes the lease, holds it briefly and releases it; B and C then want it again at once (they always have work).
    const contend = async (s: PostgresLeaseStore, name: string, everyMs: number, rounds: number) => {
      for (let round = 0; round < rounds; round++) {
        const won = await waitFor(s, `${name}-${round}`, everyMs, deadline);
        if (!won) return;
        order.push(name);
        await sleep(100);
        await s.release(won.record);
      }
    };
    await Promise.all([contend(a, "A", 1_000, 1), contend(b, "B", 20, 3), contend(c, "C", 20, 3)]);
    // A first (it began first), although B and C asked some 50 times a second; then B and C take turns: neither
    // takes the lease twice while the other waits.
    expect(order).toEqual(["A", "B", "C", "B", "C", "B", "C"]);
  }, 30_000);

  it("a waiter that stopped trying keeps the others waiting no longer than the stale window; one that closed, not at all; one that comes back with a new store takes its place back", async () => {
    const staleMs = 3_000;
    const stack = "fair-dead";
    const holder = store(stack, staleMs);
    expect((await holder.tryAcquire(claim("holder"))).acquired).toBe(true);
    const dead = store(stack, staleMs);
    expect((await dead.tryAcquire(claim("dead"))).acquired).toBe(false);
    const lastSeen = Date.now();
    // The dead waiter never tries again (a process killed while it waited, its session left open).
    const live = store(stack, staleMs);
    const won = await waitFor(live, "live", 50, Date.now() + 15_000);
    expect(won).toBeDefined();
    // Not before the dead one went stale (its place was kept while it might have been alive), and soon after.
    expect(won!.at - lastSeen).toBeGreaterThanOrEqual(staleMs - 500);
    expect(won!.at - lastSeen).toBeLessThan(staleMs + 3_000);
    await live.release(won!.record);

    // A run that gave up (a CLI run that does not wait) closes its store and leaves the queue: nobody waits for it.
    const stack3 = "fair-gave-up";
    const holder3 = store(stack3, staleMs);
    const held3 = await holder3.tryAcquire(claim("holder"));
    expect(held3.acquired).toBe(true);
    const gaveUp = store(stack3, staleMs);
    expect((await gaveUp.tryAcquire(claim("gave-up"))).acquired).toBe(false);
    await gaveUp.close();
    if (held3.acquired) await holder3.release(held3.record);
    expect((await store(stack3, staleMs).tryAcquire(claim("next"))).acquired).toBe(true);

    // A run that opens a new store for each try of its lock wait (a whole-set run) is one waiter: the process. Its next store
    // takes its place back, ahead of a replica that began to wait later and asks all the time.
    const stack2 = "fair-again";
    const holder2 = store(stack2, staleMs);
    const held = await holder2.tryAcquire(claim("holder"));
    expect(held.acquired).toBe(true);
    const first = store(stack2, staleMs, "cli-run");
    expect((await first.tryAcquire(claim("cli-try-1"))).acquired).toBe(false);
    await first.close();
    const later = store(stack2, staleMs);
    expect((await later.tryAcquire(claim("later"))).acquired).toBe(false);
    const second = store(stack2, staleMs, "cli-run");
    expect((await second.tryAcquire(claim("cli-try-2"))).acquired).toBe(false);
    if (held.acquired) await holder2.release(held.record);
    for (let i = 0; i < 5; i++) expect((await later.tryAcquire(claim("later"))).acquired).toBe(false);
    expect((await second.tryAcquire(claim("cli-try-3"))).acquired).toBe(true);

    // The queue holds no row of the ones that took the lease, nor the dead one (swept once stale): only the later one.
    const db = new Client({ connectionString: postgresTarget(postgres.backendUrl).connectionString });
    await db.connect();
    try {
      const rows = await db.query<{ stack_key: string }>("SELECT stack_key FROM user_groups_run_lease_waiters ORDER BY stack_key");
      expect(rows.rows.map((r) => r.stack_key)).toEqual(["user-groups/fair-again"]);
    } finally {
      await db.end();
    }
  }, 30_000);
});

// The file backend's lease serves its waiters by the same rule: file-waiters.unit.test.ts (on a fake clock).
