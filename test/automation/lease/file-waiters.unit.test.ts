// The file backend's lease serves its waiters first come (provider/automation/lease/
// file-store.ts), and a waiter that has not tried for FILE_WAITER_STALE_MS (8 s)
// has stopped waiting: it holds nobody up any more (docs/fleet-replicas.md). On a
// shared fake clock: no sleeping, no engine.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FILE_WAITER_STALE_MS, FileLeaseStore } from "../../../provider/automation/lease/file-store";
import type { RunClaim } from "../../../provider/automation/lease/record";
import { fakeClock } from "../../support/fake-clock";

const dir = mkdtempSync(path.join(os.tmpdir(), "file-waiters-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const claim = (runId: string, at: number): RunClaim => ({ runId, host: "here", pid: process.pid, startedAt: at, renewedAt: at });

describe("the file lease's waiters", () => {
  it("a waiter unseen for more than 8 s is stale: the next one takes the lease; until then it keeps its place", async () => {
    expect(FILE_WAITER_STALE_MS).toBe(8_000);
    const clock = fakeClock({ start: 1_000_000 });
    const open = (waiterId: string) => new FileLeaseStore(dir, "user-groups", "stale", undefined, clock, waiterId);
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
    const open = (waiterId: string) => new FileLeaseStore(dir, "user-groups", "live", undefined, clock, waiterId);
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
});
