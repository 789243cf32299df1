// The file backend's lease serves its waiters first come (provider/automation/lease/
// file-store.ts; PostgreSQL's: lease-fairness.test.ts), and a waiter that has not
// tried for FILE_WAITER_STALE_MS (8 s) has stopped waiting: it holds nobody up any
// more (docs/fleet-replicas.md). On a fake clock: the order of events is the
// clock's, not sleeps'; no engine.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FILE_WAITER_STALE_MS, FileLeaseStore } from "../../../provider/backends/file/lease-store";
import { leaseRules, type RunClaim } from "../../../provider/automation/lease/record";
import { fakeClock } from "../../support/fake-clock";

const dir = mkdtempSync(path.join(os.tmpdir(), "file-waiters-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const claim = (runId: string, at: number): RunClaim => ({ runId, host: "here", pid: process.pid, startedAt: at, renewedAt: at });

describe("the file lease's waiters", () => {
  it("a waiter unseen for more than 8 s is stale: the next one takes the lease; until then it keeps its place", async () => {
    expect(FILE_WAITER_STALE_MS).toBe(8_000);
    const clock = fakeClock({ start: 1_000_000 });
    const open = (waiterId: string) => new FileLeaseStore(dir, "user-groups", "stale", { rules: leaseRules(), clock, waiterId });
    const [holder, early, late] = [open("holder"), open("early"), open("late")];
    const held = await holder.tryAcquire(claim("holder", clock.time));
    expect(held.acquired).toBe(true);
    // "early" begins to wait (refused: the lease is held), and then never tries again (it died, or gave up unclosed).
    clock.time += 1_000;
    const earlySeen = clock.time;
    expect((await early.tryAcquire(claim("early", clock.time))).acquired).toBe(false);
    if (!held.acquired) throw new Error("unreachable");
    await holder.release(held.record);

    // "late" may not jump the queue while "early" is live: not at once, not at exactly 8 s.
    clock.time += 1_000;
    expect((await late.tryAcquire(claim("late", clock.time))).acquired).toBe(false);
    clock.time = earlySeen + FILE_WAITER_STALE_MS;
    expect((await late.tryAcquire(claim("late", clock.time))).acquired).toBe(false);
    // A moment past 8 s: "early" is stale, and "late" is served.
    clock.time = earlySeen + FILE_WAITER_STALE_MS + 1;
    expect((await late.tryAcquire(claim("late", clock.time))).acquired).toBe(true);
  });

  it("a live waiter that keeps trying keeps its place however long it waits", async () => {
    const clock = fakeClock({ start: 2_000_000 });
    const open = (waiterId: string) => new FileLeaseStore(dir, "user-groups", "live", { rules: leaseRules(), clock, waiterId });
    const [holder, early, late] = [open("holder"), open("early"), open("late")];
    const held = await holder.tryAcquire(claim("holder", clock.time));
    if (!held.acquired) throw new Error("the free lease was not taken");
    // "early" begins to wait, then "late"; both try every 5 s (the lock wait's longest backoff) for 30 s.
    for (let tries = 0; tries < 6; tries++) {
      clock.time += 5_000;
      expect((await early.tryAcquire(claim("early", clock.time))).acquired).toBe(false);
      expect((await late.tryAcquire(claim("late", clock.time))).acquired).toBe(false);
    }
    await holder.release(held.record);
    // The lease is free: "late" is still behind "early" (who began first, 30 s ago), and "early" is served.
    expect((await late.tryAcquire(claim("late", clock.time))).acquired).toBe(false);
    expect((await early.tryAcquire(claim("early", clock.time))).acquired).toBe(true);
  });

  it("are served in the order they began to wait, however often later ones try; a closed store leaves the queue, the process keeps its place", async () => {
    const clock = fakeClock({ start: 3_000_000 });
    let replica = 0;
    const open = (waiterId = `file-replica-${++replica}`) => new FileLeaseStore(dir, "user-groups", "fair", { rules: leaseRules(), clock, waiterId });
    const holder = open();
    const held = await holder.tryAcquire(claim("holder", clock.time));
    if (!held.acquired) throw new Error("the free lease was not taken");
    // A begins to wait, then B, then C (a millisecond apart on the clock: the order, not a sleep).
    const [a, b, c] = [open(), open(), open()];
    for (const w of [a, b, c]) {
      clock.time += 1;
      expect((await w.tryAcquire(claim("first-try", clock.time))).acquired).toBe(false);
    }
    await holder.release(held.record);
    // Each round B and C try before A (they always have work, A backs off): the lease still goes A, B, C, then B, C again.
    const order: string[] = [];
    const wanting = new Map([["A", { store: a, rounds: 1 }], ["B", { store: b, rounds: 2 }], ["C", { store: c, rounds: 2 }]]);
    for (let tick = 0; tick < 20 && [...wanting.values()].some((w) => w.rounds > 0); tick++) {
      clock.time += 100;
      for (const name of ["B", "C", "A"]) {
        const w = wanting.get(name)!;
        if (w.rounds === 0) continue;
        const outcome = await w.store.tryAcquire(claim(`${name}-${w.rounds}`, clock.time));
        if (!outcome.acquired) continue;
        order.push(name);
        w.rounds -= 1;
        await w.store.release(outcome.record);
        // B and C want it again at once: their next try begins a new wait, behind those already waiting.
        break;
      }
    }
    expect(order).toEqual(["A", "B", "C", "B", "C"]);

    // A run that gave up closes its store and leaves the queue; one that comes back with a new store takes its place back.
    const holder2 = open();
    const again = await holder2.tryAcquire(claim("holder-2", clock.time));
    if (!again.acquired) throw new Error("the free lease was not taken");
    const gaveUp = open();
    clock.time += 1;
    expect((await gaveUp.tryAcquire(claim("gave-up", clock.time))).acquired).toBe(false);
    await gaveUp.close();
    const first = open("cli-run");
    clock.time += 1;
    expect((await first.tryAcquire(claim("cli-try-1", clock.time))).acquired).toBe(false);
    await first.close();
    const later = open();
    clock.time += 1;
    expect((await later.tryAcquire(claim("later", clock.time))).acquired).toBe(false);
    const second = open("cli-run");
    clock.time += 1;
    expect((await second.tryAcquire(claim("cli-try-2", clock.time))).acquired).toBe(false);
    await holder2.release(again.record);
    expect((await later.tryAcquire(claim("later", clock.time))).acquired).toBe(false);
    expect((await second.tryAcquire(claim("cli-try-3", clock.time))).acquired).toBe(true);
  });
});
