// Several replicas waiting for a PostgreSQL run lease all wake at its expiry (the
// lock wait tries again right when the database says it expires): exactly one of
// them may take it. Found by the fault histories (test/jepsen/, a paused holder):
// each waiter used to read pg_stat_activity before waiting for the lease's row, so
// every one found the previous taker's session "gone" and took the lease in turn,
// fencing the one before (its run failed with run_lease_lost, retryable but late).
import { afterAll, beforeAll, expect, it } from "vitest";
import { PostgresLeaseStore } from "../../../provider/backends/postgres/lease-store";
import { leaseRules, type RunClaim } from "../../../provider/automation/lease/record";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";

let postgres: PostgresServer;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(() => postgres?.stop());

const claim = (runId: string): RunClaim => ({ runId, host: "here", pid: process.pid, startedAt: Date.now(), renewedAt: Date.now() });

it.skipIf(process.platform === "win32")("three waiters at a silent holder's expiry: one takes the lease, the others are told when to ask again", async () => {
  const timing = { ttlMs: 1_000, renewEveryMs: 60_000 };
  const stores: PostgresLeaseStore[] = [];
  const store = (stack: string) => {
    const s = new PostgresLeaseStore(postgres.backendUrl, "user-groups", stack, { rules: leaseRules(), timing });
    stores.push(s);
    return s;
  };
  try {
    for (let trial = 0; trial < 4; trial++) {
      const stack = `waiters-${trial}`;
      // The holder takes the lease and falls silent (no renewal; its session stays open: a paused process).
      const holder = store(stack);
      expect((await holder.tryAcquire(claim("holder"))).acquired).toBe(true);
      const waiters = [1, 2, 3].map(() => store(stack));
      const first = await Promise.all(waiters.map((w, i) => w.tryAcquire(claim(`early-${i}`))));
      expect(first.map((o) => o.acquired)).toEqual([false, false, false]);
      const wait = Math.max(...first.map((o) => (o.acquired ? 0 : (o.retryInMs ?? 0))));
      await new Promise((resolve) => setTimeout(resolve, wait));
      const outcomes = await Promise.all(waiters.map((w, i) => w.tryAcquire(claim(`waiter-${i}`))));
      expect(outcomes.filter((o) => o.acquired)).toHaveLength(1);
      for (const o of outcomes) if (!o.acquired) expect(o.retryInMs).toBeGreaterThan(0);
    }
  } finally {
    for (const s of stores) await s.close().catch(() => undefined);
  }
}, 60_000);
