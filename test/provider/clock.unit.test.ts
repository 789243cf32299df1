// The one clock of the timed policies (provider/clock.ts), and the separate
// now/sleep/random options of the public option bags, deprecated but still honoured.
import { describe, expect, it } from "vitest";
import { Pacer } from "../../provider/client/pacer";
import { clockOf, clockWith, systemClock } from "../../provider/clock";
import { fakeClock } from "../support/fake-clock";

describe("the clock", () => {
  it("is the system's unless given; clockWith replaces some of its parts", async () => {
    expect(clockOf({})).toBe(systemClock);
    const before = Date.now();
    await systemClock.sleep(5);
    expect(systemClock.now() - before).toBeGreaterThanOrEqual(4);
    const random = systemClock.random();
    expect(random >= 0 && random < 1).toBe(true);
    const frozen = clockWith({ now: () => 42 });
    expect(frozen.now()).toBe(42);
    expect(frozen.sleep).toBe(systemClock.sleep);
  });

  it("a sleep given a signal stops when it aborts", async () => {
    const abort = new AbortController();
    const sleeping = systemClock.sleep(60_000, abort.signal);
    abort.abort(new Error("stop"));
    await expect(sleeping).rejects.toThrow("stop");
  });

  it("a sleep with keepAlive: false holds no process up (a watchdog's tick, a flush's cap); by default it does", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
    const abort = new AbortController();
    const before = timers();
    const background = systemClock.sleep(60_000, abort.signal, { keepAlive: false });
    expect(timers()).toBe(before);
    const foreground = systemClock.sleep(60_000, abort.signal);
    expect(timers()).toBe(before + 1);
    abort.abort(new Error("done"));
    await expect(background).rejects.toThrow("done");
    await expect(foreground).rejects.toThrow("done");
    // Through clockOf's wrapper too (a deprecated option replacing another part keeps the sleep's options).
    const wrapped = clockOf({ now: () => 0 });
    const again = new AbortController();
    const wrappedSleep = wrapped.sleep(60_000, again.signal, { keepAlive: false });
    expect(timers()).toBe(before);
    again.abort(new Error("done"));
    await expect(wrappedSleep).rejects.toThrow("done");
  });

  it("the deprecated now/sleep/random options replace those parts of the clock given (or the system's)", async () => {
    const clock = fakeClock({ start: 1_000, random: () => 0.25 });
    const mixed = clockOf({ clock, random: () => 0.75 });
    expect(mixed.now()).toBe(1_000);
    await mixed.sleep(10);
    expect(clock.slept).toEqual([10]);
    expect(mixed.random()).toBe(0.75);
    const legacy = clockOf({ now: () => 7, sleep: async () => {} });
    expect(legacy.now()).toBe(7);
    expect(legacy.random()).toBeLessThan(1);
  });

  it("the pacer still takes a bare function for its time (the deprecated PacerClock)", () => {
    let now = 0;
    const pacer = new Pacer(() => now);
    pacer.reserve();
    pacer.observe(200, undefined);
    now = 100;
    pacer.observe(429, 1000);
    expect(pacer.reserve()).toBe(1000);
  });
});
