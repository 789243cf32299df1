// The client-side pacer (provider/client/pacer.ts) with a fake clock, and the
// environment overrides of retries and timeouts (provider/client/tuning.ts).
import { describe, expect, it } from "vitest";
import { Pacer } from "../../provider/client/pacer";
import { clockWith } from "../../provider/clock";
import { tuningFromEnv } from "../../provider/client/tuning";

describe("Pacer", () => {
  it("does not pace before the first 429", () => {
    let now = 1000;
    const pacer = new Pacer(clockWith({ now: () => now }));
    for (let i = 0; i < 50; i++) {
      expect(pacer.reserve()).toBe(0);
      pacer.observe(200, undefined);
      now += 1;
    }
  });

  it("after a 429 blocks until Retry-After, then spaces requests by the rate the window implies", () => {
    let now = 0;
    const pacer = new Pacer(clockWith({ now: () => now }), { safety: 1 });
    // 30 requests admitted in the first second of a 10 s window, then a 429 saying 9 s.
    for (let i = 0; i < 30; i++) {
      pacer.reserve();
      pacer.observe(200, undefined);
      now += 33;
    }
    now = 1000;
    pacer.reserve();
    pacer.observe(429, 9000);
    // More 429s of the same burst change nothing.
    pacer.observe(429, 8900);
    expect(pacer.state.intervalMs).toBeCloseTo(10_000 / 30, 5);
    expect(pacer.reserve()).toBe(9000); // first slot when the window reopens
    expect(pacer.reserve()).toBeCloseTo(9000 + 10_000 / 30, 5);
    expect(pacer.reserve()).toBeCloseTo(9000 + 20_000 / 30, 5);
  });

  it("a retry's own backoff and its slot do not add up", () => {
    let now = 0;
    const pacer = new Pacer(clockWith({ now: () => now }));
    pacer.reserve();
    pacer.observe(200, undefined);
    now = 100;
    pacer.observe(429, 1000);
    expect(pacer.reserve(now + 1000)).toBe(1000);
    expect(pacer.reserve(now + 5000)).toBe(5000);
  });

  it("a 429 while paced only makes the spacing wider", () => {
    let now = 0;
    const pacer = new Pacer(clockWith({ now: () => now }), { safety: 1.05 });
    pacer.reserve();
    pacer.observe(200, undefined);
    now = 10;
    pacer.observe(429, 990);
    const first = pacer.state.intervalMs;
    now = 1000;
    for (let i = 0; i < 100; i++) {
      now += pacer.reserve();
      pacer.observe(200, undefined);
    }
    pacer.observe(429, 1000);
    expect(pacer.state.intervalMs).toBeGreaterThanOrEqual(first * 1.05);
    expect(pacer.state.limited).toBe(2);
  });

  it("keeps at most a minute between requests", () => {
    let now = 0;
    const pacer = new Pacer(clockWith({ now: () => now }));
    pacer.reserve();
    pacer.observe(200, undefined);
    now = 1;
    pacer.observe(429, 3_600_000);
    expect(pacer.state.intervalMs).toBe(60_000);
  });
});

describe("tuningFromEnv", () => {
  it("reads the overrides and leaves the rest to the defaults", () => {
    expect(tuningFromEnv({})).toEqual({ retry: {}, timeouts: {} });
    expect(
      tuningFromEnv({
        USER_GROUPS_HTTP_TIMEOUT_MS: "800",
        USER_GROUPS_MAX_ATTEMPTS: "3",
        USER_GROUPS_RETRY_BASE_DELAY_MS: "40",
        USER_GROUPS_RETRY_MAX_DELAY_MS: "400",
        USER_GROUPS_RETRY_MAX_ELAPSED_MS: "5000",
      }),
    ).toEqual({
      retry: { maxAttempts: 3, baseDelayMs: 40, maxDelayMs: 400, maxElapsedMs: 5000 },
      timeouts: { connectMs: 800, headersMs: 800, bodyMs: 800 },
    });
  });

  it("refuses a value that is not a positive whole number, naming the variable", () => {
    for (const bad of ["0", "-1", "1.5", "ten", "1e3x"]) {
      expect(() => tuningFromEnv({ USER_GROUPS_MAX_ATTEMPTS: bad })).toThrow(/USER_GROUPS_MAX_ATTEMPTS must be a positive whole number/);
    }
  });
});
