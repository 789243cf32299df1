// W11: the optional per-key rate limit.
import { afterEach, describe, expect, it } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { RateLimiter } from "../../fake-server/rate-limit.js";
import { KEYS, call, expectError, expectOk, start } from "./helpers.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const body = { name: "Acme", user_group_id: "acme" };

describe("W11 rate limit", () => {
  it("is off by default", async () => {
    server = await start();
    const s = server;
    const replies = await Promise.all(Array.from({ length: 300 }, () => call(s, "GET", body)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
  });

  it("past N requests per window a key gets 429 with Retry-After in whole seconds; other keys are unaffected", async () => {
    server = await start({ rateLimit: { requests: 3, windowSeconds: 2 } });
    for (let i = 0; i < 3; i++) expectOk(await call(server, "GET", body), "GET");
    const refused = await call(server, "GET", body);
    expectError(refused, 429, "rate_limited");
    expect(String(refused.headers["retry-after"])).toMatch(/^[12]$/);
    // Every method counts against the same key.
    expectError(await call(server, "PUT", { user_group_id: "acme" }), 429, "rate_limited");
    // Another key has its own budget.
    expectOk(await call(server, "GET", { name: "T", user_group_id: "t" }, { key: KEYS.testing }), "GET");
    // Unauthenticated requests are refused before they count.
    expectError(await call(server, "GET", body, { key: "unknown-key-zzzz" }), 401, "unauthorized");
  });

  it("a new window opens after Retry-After", async () => {
    server = await start({ rateLimit: { requests: 1, windowSeconds: 1 } });
    expectOk(await call(server, "GET", body), "GET");
    const refused = await call(server, "GET", body);
    expectError(refused, 429, "rate_limited");
    // A fixed wait on purpose: the time passing is what opens the window (the behaviour under test).
    await new Promise((r) => setTimeout(r, Number(refused.headers["retry-after"]) * 1000 + 50));
    expectOk(await call(server, "GET", body), "GET");
  });

  it("counts fixed windows per key (unit)", () => {
    let now = 10_000;
    const limiter = new RateLimiter({ requests: 2, windowSeconds: 60 }, () => now);
    expect(limiter.take(0)).toEqual({ ok: true });
    expect(limiter.take(0)).toEqual({ ok: true });
    now += 500;
    expect(limiter.take(0)).toEqual({ ok: false, retryAfterSeconds: 60 });
    expect(limiter.take(1)).toEqual({ ok: true });
    now += 58_600;
    expect(limiter.take(0)).toEqual({ ok: false, retryAfterSeconds: 1 });
    now += 1_000;
    expect(limiter.take(0)).toEqual({ ok: true });
  });

  it("tells each key's standing without counting a request (unit, GET /__admin/rate-limit)", () => {
    let now = 10_000;
    const limiter = new RateLimiter({ requests: 2, windowSeconds: 60 }, () => now);
    const keys = [
      { environment: "Customer", readOnly: false },
      { environment: "Testing", readOnly: true },
    ];
    for (let i = 0; i < 3; i += 1) limiter.take(0);
    now += 20_500;
    const state = limiter.state(keys);
    expect(state).toEqual({
      requests: 2,
      windowSeconds: 60,
      keys: [
        { key: 0, environment: "Customer", readOnly: false, used: 3, remaining: 0, resetsInSeconds: 40 },
        { key: 1, environment: "Testing", readOnly: true, used: 0, remaining: 2, resetsInSeconds: null },
      ],
    });
    expect(limiter.state(keys)).toEqual(state);
    now += 39_500;
    expect(limiter.state(keys).keys[0]).toEqual({ key: 0, environment: "Customer", readOnly: false, used: 0, remaining: 2, resetsInSeconds: null });
  });
});
