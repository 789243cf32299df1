// The object stores' clock (StoreClock, provider/backends/object-client.ts): read
// off whole-second Date headers, so every estimate is a window. Replicas must
// agree with each other, not only each with the store, or a shared rate budget
// hands two of them one slot (the failure CI saw on moto: two bookings 11 ms apart).
import { describe, expect, it } from "vitest";
import { StoreClock } from "../../provider/backends/object-client";

/** The Date header a store whose clock is `offsetMs` ahead of ours sends at our time `at`. */
function dateHeader(at: number, offsetMs: number): string {
  return new Date(at + offsetMs).toUTCString();
}

describe("the store's clock, read off its Date headers", () => {
  it("is this host's clock when the store's agrees with it, whatever part of its second each answer came in", () => {
    // Two replicas on one host (or two NTP-synced hosts) see the store's second at different
    // points: the middle of each one's window would put them up to a second apart.
    const early = new StoreClock();
    const late = new StoreClock();
    const second = Math.floor(Date.now() / 1_000) * 1_000;
    early.observe(dateHeader(second + 20, 0), second + 10, second + 20);
    late.observe(dateHeader(second + 980, 0), second + 970, second + 980);
    expect(early.offset()).toBe(0);
    expect(late.offset()).toBe(0);
    const [a, b] = [early.now(), late.now()];
    expect(Math.abs(a - b)).toBeLessThan(50);
  });

  it("moves a host that is off by more than the window to the nearest bound the headers allow", () => {
    const clock = new StoreClock();
    const sentAt = 1_700_000_000_000;
    // The store is 5 minutes ahead: its header says so, whatever the round trip.
    clock.observe(dateHeader(sentAt, 300_000), sentAt, sentAt + 40);
    expect(clock.offset()).toBeGreaterThanOrEqual(300_000 - 1_000);
    expect(clock.offset()).toBeLessThanOrEqual(300_000 + 1_000);
    // The store is 5 minutes behind.
    const behind = new StoreClock();
    behind.observe(dateHeader(sentAt, -300_000), sentAt, sentAt + 40);
    expect(behind.offset()).toBeLessThanOrEqual(-300_000 + 1_000);
    expect(behind.offset()).toBeGreaterThanOrEqual(-300_000 - 1_000);
  });

  it("keeps the tightest window of several answers, and starts over when the store's clock jumps", () => {
    const clock = new StoreClock();
    const t = 1_700_000_000_000; // a whole second
    // The store is 2.5 s ahead: one answer says the offset is in [2.0 s, 3.0 s], another in [2.4 s, 3.4 s].
    clock.observe(new Date(t + 2_000).toUTCString(), t - 10, t);
    clock.observe(new Date(t + 3_000).toUTCString(), t + 590, t + 600);
    expect(clock.offset()).toBe(2_400);
    // A jump of an hour crosses the window: the old bounds are dropped.
    clock.observe(new Date(t + 3_600_000).toUTCString(), t + 1_000, t + 1_010);
    expect(clock.offset()).toBeGreaterThan(3_590_000);
  });

  it("ignores an answer with no date or one that is not a date", () => {
    const clock = new StoreClock();
    clock.observe(null, 0, 10);
    clock.observe("yesterday-ish", 0, 10);
    expect(clock.offset()).toBe(0);
  });
});
