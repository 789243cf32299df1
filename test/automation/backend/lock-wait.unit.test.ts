// Waiting for a locked stack: the policy shared by the fleet and the CLI, and what
// the CLI says of the run holding it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { describe, expect, it } from "vitest";
import { RunLeaseHeldError, type RunRecord } from "../../../provider/automation/lease/record";
import { PROJECT_NAME } from "../../../provider/automation/engine/workspace";
import { parseDurationMs } from "../../../provider/automation/model/duration";
import { explainLock } from "../../../provider/cli/lock-message";
import {
  isStackLocked,
  nextLockWaitMs,
  StackLockedError,
  StackLockTimeoutError,
  withStackLockWait,
} from "../../../provider/automation/backend/lock-wait";
import { fakeClock as sharedFakeClock } from "../../support/fake-clock";

/** A ConcurrentUpdateError as @pulumi/pulumi/automation raises it for a diy backend's lock. */
function lockedByAnotherRun(): ConcurrentUpdateError {
  return new ConcurrentUpdateError({
    stdout: "",
    stderr: "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file",
    code: 255,
    err: undefined,
  } as unknown as ConstructorParameters<typeof ConcurrentUpdateError>[0]);
}

/** A clock starting at 0 whose sleeps (`waits`) move it on. */
function fakeClock(random?: () => number) {
  const clock = sharedFakeClock(random ? { random } : {});
  return Object.assign(clock, { waits: clock.slept });
}

describe("isStackLocked", () => {
  it("knows the engine's lock refusals, and the diy backend's lock check losing a race with a lock's release", () => {
    expect(isStackLocked(lockedByAnotherRun())).toBe(true);
    expect(isStackLocked(new StackLockedError("customers"))).toBe(true);
    // As Pulumi 3.259 on postgres:// says it when another run's lock vanishes mid-check.
    const listingRace = new Error(
      "Command failed with exit code 1: pulumi stack init customers --non-interactive\n" +
        "error: could not create stack: could not list bucket: blob (code=NotFound): sql: no rows in result set",
    );
    expect(isStackLocked(listingRace)).toBe(true);
    const readingRace = new Error(
      'error: blob (key ".pulumi/locks/organization/user-groups/customers/5f0c.json") (code=NotFound): sql: no rows in result set',
    );
    expect(isStackLocked(readingRace)).toBe(true);
    expect(isStackLocked(new Error('error: blob (key ".pulumi/stacks/user-groups/customers.json") (code=NotFound): no such stack'))).toBe(false);
    expect(isStackLocked(new Error("error: could not list bucket: permission denied for table pulumi_state"))).toBe(false);
    expect(isStackLocked(new Error("[403] Forbidden"))).toBe(false);
  });
});

describe("withStackLockWait", () => {
  it("retries a locked stack with growing, jittered waits until the run goes through", async () => {
    const clock = fakeClock(() => 0.999);
    let calls = 0;
    const result = await withStackLockWait(
      async () => {
        calls += 1;
        if (calls < 5) throw lockedByAnotherRun();
        return "done";
      },
      { stackName: "customers", timeoutMs: 60_000, clock },
    );
    expect(result).toBe("done");
    expect(calls).toBe(5);
    // Ceilings 200, 400, 800, 1600 ms (random ~1 draws near the ceiling).
    expect(clock.waits).toEqual([199, 399, 799, 1598]);
  });

  it("a run lease that says when it expires is tried again right then, never later than the backoff", async () => {
    const clock = fakeClock();
    let calls = 0;
    const held = (retryInMs: number) => new StackLockedError("customers", { cause: new RunLeaseHeldError(undefined, retryInMs) });
    await withStackLockWait(
      async () => {
        calls += 1;
        if (calls === 1) throw held(9_000);
        if (calls <= 5) throw held(120);
        return "done";
      },
      { stackName: "customers", timeoutMs: 60_000, now: clock.now, sleep: clock.sleep, random: () => 0.999 },
    );
    expect(clock.waits).toEqual([199, 120, 120, 120, 120]);
  });

  it("gives up after the budget with an error naming the stack and the time waited", async () => {
    const clock = fakeClock(() => 0.5);
    const error = await withStackLockWait(
      async () => {
        throw lockedByAnotherRun();
      },
      { stackName: "customers", timeoutMs: 10_000, clock },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StackLockTimeoutError);
    expect((error as StackLockTimeoutError).message).toMatch(/Stack "customers" stayed locked by another run for 10 s/);
    expect((error as StackLockTimeoutError).cause).toBeInstanceOf(ConcurrentUpdateError);
    // It never sleeps past the budget.
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it("fails at once with StackLockedError when the timeout is 0", async () => {
    const clock = fakeClock();
    const error = await withStackLockWait(
      async () => {
        throw lockedByAnotherRun();
      },
      { stackName: "prod", timeoutMs: 0, clock },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StackLockedError);
    expect(clock.waits).toEqual([]);
  });

  it("passes any other failure through untouched, without waiting", async () => {
    const clock = fakeClock();
    const boom = new Error("wrong passphrase");
    await expect(
      withStackLockWait(
        async () => {
          throw boom;
        },
        { stackName: "prod", timeoutMs: 60_000, clock },
      ),
    ).rejects.toBe(boom);
    expect(clock.waits).toEqual([]);
  });
  it("still honours the deprecated now/sleep/random options", async () => {
    const clock = fakeClock();
    let calls = 0;
    await withStackLockWait(
      async () => {
        calls += 1;
        if (calls < 3) throw lockedByAnotherRun();
      },
      { stackName: "customers", timeoutMs: 60_000, now: clock.now, sleep: clock.sleep, random: () => 0.999 },
    );
    expect(clock.waits).toEqual([199, 399]);
  });
});

describe("nextLockWaitMs", () => {
  it("caps the wait at the largest backoff and never below a few ms", () => {
    expect(nextLockWaitMs(30, 0, { timeoutMs: 600_000 }, () => 0.999)).toBe(4_995);
    expect(nextLockWaitMs(1, 0, { timeoutMs: 600_000 }, () => 0)).toBe(5);
    expect(nextLockWaitMs(3, 600_000, { timeoutMs: 600_000 }, () => 0.5)).toBeUndefined();
  });
});

describe("parseDurationMs", () => {
  it("reads the units a flag takes", () => {
    expect(parseDurationMs("10m")).toBe(600_000);
    expect(parseDurationMs("90s")).toBe(90_000);
    expect(parseDurationMs("45")).toBe(45_000);
    expect(parseDurationMs("250ms")).toBe(250);
    expect(parseDurationMs("1h")).toBe(3_600_000);
    expect(parseDurationMs("ten minutes")).toBeUndefined();
    expect(parseDurationMs("-5s")).toBeUndefined();
  });
});

describe("explainLock: who holds a locked stack", () => {
  const lease = (pid: number): RunRecord => ({ version: 1, runId: "run-1", host: "ci-host", pid, startedAt: Date.UTC(2026, 10, 24), renewedAt: Date.UTC(2026, 10, 24), expiresAt: Date.UTC(2026, 10, 24) + 60_000, released: false, unfinished: [], adopt: [] });
  const backend = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "explain-lock-"));
    const locks = path.join(dir, ".pulumi", "locks", "organization", PROJECT_NAME, "prod");
    mkdirSync(locks, { recursive: true });
    return { dir, locks, url: `file://${dir}` };
  };

  it("names the run lease's holder when Pulumi's lock file is half written or gone as it is read", () => {
    const { dir, locks, url } = backend();
    try {
      const refusal = new StackLockedError("prod", { cause: new RunLeaseHeldError(lease(4242)) });
      // No lock file: the holder is between its engine's runs.
      expect(explainLock(url, "prod", "user-groups recover", refusal).text).toMatch(/pid 4242 on host "ci-host" \(since 2026-11-24T00:00:00.000Z\) holds the lock and is still running/);
      // A lock file caught mid-write (Pulumi writes it in place): before, this said nothing at all.
      writeFileSync(path.join(locks, "a.json"), '{"pid": 12');
      expect(explainLock(url, "prod", "user-groups recover", refusal).text).toMatch(/pid 4242 .* holds the lock and is still running/);
      // Without a lease holder, a lock file mid-write leaves nothing to say.
      expect(explainLock(url, "prod", "user-groups recover", new StackLockedError("prod")).text).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("describes Pulumi's live lock holders when there are any", () => {
    const { dir, locks, url } = backend();
    try {
      writeFileSync(path.join(locks, "b.json"), JSON.stringify({ pid: process.pid, hostname: "elsewhere", timestamp: "2026-11-24T01:00:00Z" }));
      const text = explainLock(url, "prod", "user-groups recover", new StackLockedError("prod", { cause: new RunLeaseHeldError(lease(4242)) })).text;
      expect(text).toMatch(/pid \d+ on host "elsewhere" \(since 2026-11-24T01:00:00Z\) holds the lock; that host's processes cannot be checked from here/);
      expect(text).not.toMatch(/4242/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
