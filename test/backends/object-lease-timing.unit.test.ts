// An object-store lease's time-to-live from USER_GROUPS_OBJECT_LEASE_TTL_MS: the
// default without it, renewed every quarter of it, and a value out of range or
// not a whole number refused with a coded error that does not echo it (an escape in it
// reaches no terminal).
import { afterEach, describe, expect, it } from "vitest";
import type { LeaseRules } from "../../provider/backends/backend";
import type { ObjectClient } from "../../provider/backends/object-client";
import { OBJECT_LEASE_TIMING, OBJECT_LEASE_TTL_ENV, ObjectLeaseStore, objectLeaseTiming } from "../../provider/backends/object-lease";

describe("an object-store lease's timing", () => {
  const before = process.env[OBJECT_LEASE_TTL_ENV];
  afterEach(() => {
    if (before === undefined) delete process.env[OBJECT_LEASE_TTL_ENV];
    else process.env[OBJECT_LEASE_TTL_ENV] = before;
  });

  it("is the default (20 s, renewed every 5 s) unless the variable is set", () => {
    expect(objectLeaseTiming({})).toEqual({ ttlMs: 20_000, renewEveryMs: 5_000 });
    expect(objectLeaseTiming({ [OBJECT_LEASE_TTL_ENV]: " " })).toBe(OBJECT_LEASE_TIMING);
  });

  it("takes a time-to-live from 6 s to 5 min, renewed every quarter of it; a store made in this process uses it", () => {
    expect(objectLeaseTiming({ [OBJECT_LEASE_TTL_ENV]: "8000" })).toEqual({ ttlMs: 8_000, renewEveryMs: 2_000 });
    expect(objectLeaseTiming({ [OBJECT_LEASE_TTL_ENV]: "300000" })).toEqual({ ttlMs: 300_000, renewEveryMs: 75_000 });
    process.env[OBJECT_LEASE_TTL_ENV] = "6000";
    const store = new ObjectLeaseStore({ place: "test" } as ObjectClient, "project", "stack", { rules: {} as LeaseRules, waiterId: "w" });
    expect(store.timing).toEqual({ ttlMs: 6_000, renewEveryMs: 1_500 });
    // A timing the caller passes wins over the environment.
    expect(new ObjectLeaseStore({ place: "test" } as ObjectClient, "project", "stack", { rules: {} as LeaseRules, waiterId: "w", timing: { ttlMs: 2_000, renewEveryMs: 500 } }).timing.ttlMs).toBe(2_000);
  });

  it.each(["5999", "300001", "0", "-8000", "8e3", "8000ms", "8000.5", "\u001b[31m8000", "99999999999999999999"])("refuses %j coded invalid_tuning, without echoing it", (value) => {
    let thrown: unknown;
    try {
      objectLeaseTiming({ [OBJECT_LEASE_TTL_ENV]: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: "invalid_tuning" });
    expect((thrown as Error).message).toBe(`${OBJECT_LEASE_TTL_ENV} must be a whole number of milliseconds from 6000 to 300000 (its value is not shown)`);
  });
});
