// One rate budget per key (provider/client/rate-budget*.ts): the slot arithmetic
// with an injected clock, the budget of one process, the file ledger (its lock
// and a SIGKILLed holder), the key never in a store, and clients sharing a key
// against the fake server's limit through the file and PostgreSQL stores.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import { clockWith, systemClock } from "../../provider/clock";
import { FileSlotStore, LOCK_STALE_MS } from "../../provider/backends/file/slot-store";
import { PostgresSlotStore } from "../../provider/backends/postgres/slot-store";
import { rateBudgetFromEnv, slotStoreFor } from "../../provider/client/rate-budget/stores";
import {
  bookSlot,
  budgetIdOf,
  holdSlots,
  InProcessSlotStore,
  MAX_AHEAD_MS,
  MAX_HOLD_MS,
  PacedRateBudget,
  parseRateLimit,
  type RateBudget,
  type SlotStore,
  SLOT_RULES,
  slotIntervalMs,
} from "../../provider/client/rate-budget/budget";
import { rateBudgetEnv } from "../../provider/backends";
import { createTablesIfMissing } from "../../provider/backends/postgres/tables";
import { type PostgresServer, startPostgres } from "../../testkit/postgres";
import { fakeClock } from "../support/fake-clock";
import { waitFor } from "../support/wait-for";

const KEY = "rate-budget-test-key-0123456789abcdef";

/** A fake clock whose sleeps move it on (bookings of one budget are serial, so this is consistent). */
function fakeTime(start = 1_000_000) {
  return fakeClock({ start });
}

/** Every file under a directory, as text. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), "utf8"));
}

describe("slot arithmetic", () => {
  it("spaces slots one interval apart from the later of now and the next free slot", () => {
    let next: number | undefined;
    const starts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const booking = bookSlot(next, 1000, 100);
      starts.push(booking.at);
      next = booking.nextFree;
    }
    expect(starts).toEqual([1000, 1100, 1200, 1300, 1400]);
    // An idle budget's next free slot lies in the past: the slot is now.
    expect(bookSlot(500, 1000, 100)).toEqual({ at: 1000, nextFree: 1100 });
  });

  it("drops a next free slot beyond MAX_AHEAD_MS (a clock jump, a damaged ledger) and caps a hold", () => {
    expect(bookSlot(1000 + MAX_AHEAD_MS + 1, 1000, 100)).toEqual({ at: 1000, nextFree: 1100 });
    expect(bookSlot(Number.NaN, 1000, 100).at).toBe(1000);
    expect(holdSlots(1200, 1000, 5000)).toBe(6000);
    expect(holdSlots(9000, 1000, 5000)).toBe(9000);
    expect(holdSlots(undefined, 0, 1e12)).toBe(MAX_HOLD_MS);
  });

  it("at the default 180/60 no 60 s window holds more than 180 slots, even with every request up to 1.5 s late", () => {
    const interval = slotIntervalMs(parseRateLimit("X", undefined) as { requests: number; windowMs: number });
    expect(interval).toBeCloseTo(60_000 / (180 * 0.97), 6);
    const starts: number[] = [];
    let next: number | undefined;
    for (let i = 0; i < 1000; i++) {
      const booking = bookSlot(next, 0, interval);
      next = booking.nextFree;
      // Lateness that bunches requests worst: the early ones of a window late, the later ones on time.
      starts.push(booking.at + (i % 200 < 20 ? 1500 : 0));
    }
    starts.sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[j]! < starts[i]! - 60_000 + 1e-9) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(180);
  });

  it("reads REQUESTS/SECONDS or off, and refuses anything else by name", () => {
    expect(parseRateLimit("V", undefined)).toEqual({ requests: 180, windowMs: 60_000 });
    expect(parseRateLimit("V", " 30/10 ")).toEqual({ requests: 30, windowMs: 10_000 });
    expect(parseRateLimit("V", "OFF")).toBe("off");
    for (const bad of ["180", "0/60", "180/0", "-1/60", "1e3/60", "180/60/1", "abc"]) {
      expect(() => parseRateLimit("USER_GROUPS_RATE_LIMIT", bad)).toThrow(/USER_GROUPS_RATE_LIMIT must be REQUESTS\/SECONDS/);
    }
  });

  it("names a budget by base URL and key without the key: the same for spellings of one URL, different per key", () => {
    const id = budgetIdOf("https://api.example.com/", KEY);
    expect(id).toMatch(/^[0-9a-f]{48}$/);
    expect(id).toBe(budgetIdOf("https://api.example.com", KEY));
    expect(id).not.toBe(budgetIdOf("https://api.example.com", `${KEY}x`));
    expect(id).not.toBe(budgetIdOf("https://other.example.com", KEY));
    expect(id).not.toContain(KEY);
    expect(id).not.toContain(Buffer.from(KEY).toString("hex"));
  });
});

describe("PacedRateBudget", () => {
  it("lets concurrent requests of one process go one interval apart, in order", async () => {
    const time = fakeTime();
    const budget = new PacedRateBudget(new InProcessSlotStore(time), "a".repeat(48), 250, { clock: time });
    const started: number[] = [];
    await Promise.all(Array.from({ length: 6 }, () => budget.acquire().then(() => started.push(time.now()))));
    expect(started.map((t) => t - 1_000_000)).toEqual([0, 250, 500, 750, 1000, 1250]);
  });

  it("two processes on one store share the allowance instead of each taking all of it", async () => {
    const time = fakeTime();
    const store = new InProcessSlotStore(time);
    const id = "b".repeat(48);
    const a = new PacedRateBudget(store, id, 100, { clock: time });
    const b = new PacedRateBudget(store, id, 100, { clock: time });
    const started: number[] = [];
    const take = (budget: RateBudget) => budget.acquire().then(() => started.push(time.now()));
    await Promise.all([take(a), take(b), take(a), take(b), take(a), take(b)]);
    // Six slots in all, 100 ms apart: a shared clock of 600 ms, not 300 ms each.
    expect(Math.max(...started) - 1_000_000).toBeGreaterThanOrEqual(500);
  });

  it("a failing store does not fail requests: the process paces alone and says so without the store's message", async () => {
    const time = fakeTime();
    const lines: string[] = [];
    const failing: SlotStore = {
      book: async () => {
        throw Object.assign(new Error(`connect postgres://u:${KEY}@db failed`), { code: "ECONNREFUSED" });
      },
      hold: async () => {
        throw new Error("down");
      },
      close: async () => {},
    };
    const budget = new PacedRateBudget(failing, "c".repeat(48), 200, { clock: time, log: (line) => lines.push(line) });
    const started: number[] = [];
    for (let i = 0; i < 3; i++) {
      await budget.acquire();
      started.push(time.now() - 1_000_000);
    }
    await budget.holdOff(1000);
    expect(started).toEqual([0, 200, 400]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("ECONNREFUSED");
    expect(lines.join("\n")).not.toContain(KEY);
  });
});

describe("the client and its budget", () => {
  let server: Awaited<ReturnType<typeof startFakeServer>>;
  beforeAll(async () => {
    server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  });
  afterAll(async () => {
    await server.close();
  });

  it("takes a slot for every attempt, and the wait for it does not count against the retry budget", async () => {
    const time = fakeTime(Date.now());
    let acquired = 0;
    const holds: number[] = [];
    // A budget whose every slot is 5 s away: far longer than the 1 s this request may spend retrying.
    const slow: RateBudget = {
      acquire: async () => {
        acquired += 1;
        time.time += 5000;
      },
      holdOff: async (ms) => void holds.push(ms),
    };
    const client = new UserGroupsClient({
      baseUrl: server.url,
      apiKey: KEY,
      rateBudget: slow,
      retry: { maxElapsedMs: 1000, baseDelayMs: 1, maxDelayMs: 1 },
      clock: { now: time.now, sleep: time.sleep, random: () => 0.5 },
    });
    try {
      server.setFaults([{ method: "GET", action: "status", status: 503, times: 1 }]);
      const created = await client.getOrCreate({ name: "Paced", user_group_id: "paced", mapping: {} });
      expect(created.response.user_group.provided_id).toBe("paced");
      expect(acquired).toBe(2);
      // A 429 holds every sharer of the budget off for its Retry-After (7 s is past this client's own retry budget: it gives up).
      server.setFaults([{ method: "PUT", action: "status", status: 429, retryAfter: 7, times: 1 }]);
      await expect(client.update({ user_group_id: "paced" })).rejects.toThrow(/HTTP 429/);
      await waitFor(() => holds.length > 0, { what: "the budget to be held off" });
      expect(holds).toEqual([7000]);
    } finally {
      await client.close();
      server.setFaults([]);
    }
  });

  it("the provider's environment: the default limit, off, and a malformed limit or store refused by name", () => {
    expect(rateBudgetFromEnv({}, server.url, KEY)).toBeInstanceOf(PacedRateBudget);
    expect((rateBudgetFromEnv({}, server.url, KEY) as PacedRateBudget).intervalMs).toBeCloseTo(60_000 / (180 * 0.97), 6);
    expect(rateBudgetFromEnv({ USER_GROUPS_RATE_LIMIT: "off" }, server.url, KEY)).toBeUndefined();
    expect(() => rateBudgetFromEnv({ USER_GROUPS_RATE_LIMIT: "180 per minute" }, server.url, KEY)).toThrow(/USER_GROUPS_RATE_LIMIT/);
    for (const bad of ["file://relative/dir", "https://example.com/budget", "file://%zz"]) {
      expect(() => slotStoreFor(bad, undefined)).toThrow(/USER_GROUPS_RATE_BUDGET must be/);
    }
    expect(() => slotStoreFor("postgres://db/x", "x; DROP TABLE pulumi_state")).toThrow(/not a plain SQL name/);
  });

  it("the automation layer puts the budget in the backend, never with a password", () => {
    expect(rateBudgetEnv("file:///srv/state")).toEqual({ USER_GROUPS_RATE_BUDGET: "file:///srv/state/.user-groups/rate-budget" });
    const pg = rateBudgetEnv("postgres://alice:s3cr%2Ft@db.example:5432/pulumi?table=ops.pulumi_state&password=other");
    expect(pg.USER_GROUPS_RATE_BUDGET_TABLE).toBe("ops.user_groups_rate_budget");
    expect(pg.USER_GROUPS_RATE_BUDGET).toMatch(/^postgres:\/\/alice@db\.example:5432\/pulumi\?/);
    expect(JSON.stringify(pg)).not.toMatch(/s3cr|other/);
    // An object store keeps the budget in its bucket (provider/backends/object-adapter.ts); Pulumi Cloud has no place for one.
    expect(rateBudgetEnv("s3://bucket/state")).toEqual({ USER_GROUPS_RATE_BUDGET: "s3://bucket/state" });
    expect(rateBudgetEnv("https://api.pulumi.com")).toEqual({});
  });
});

describe("FileSlotStore", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "rate-budget-file-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("books distinct evenly spaced slots for processes at once, in a private ledger that never holds the key", async () => {
    const ledgerDir = path.join(dir, "backend", ".user-groups", "rate-budget");
    // Three "processes": each its own store and budget, one ledger.
    const id = budgetIdOf("http://127.0.0.1:1", KEY);
    // The clock stands still, so each booking's wait is its slot: 30 bookings at once must get 30 distinct slots 20 ms apart.
    const frozen = Date.now();
    const stores = [0, 1, 2].map(() => new FileSlotStore(ledgerDir, { rules: SLOT_RULES, clock: clockWith({ now: () => frozen }) }));
    const waits: number[] = [];
    await Promise.all(stores.flatMap((store) => Array.from({ length: 10 }, () => store.book(id, 20).then((wait) => waits.push(wait)))));
    expect(waits.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i * 20));
    expect(statSync(ledgerDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.dirname(ledgerDir)).mode & 0o777).toBe(0o700);
    const files = readdirSync(ledgerDir);
    expect(files).toEqual([`${id}.json`]);
    expect(statSync(path.join(ledgerDir, files[0]!)).mode & 0o777).toBe(0o600);
    for (const text of filesUnder(path.join(dir, "backend"))) expect(text).not.toContain(KEY);
  });

  it("a damaged or far-future ledger starts again from now; a looser directory is made private again", async () => {
    const ledgerDir = path.join(dir, "damaged");
    const store = new FileSlotStore(ledgerDir, { rules: SLOT_RULES });
    const id = "d".repeat(48);
    await store.book(id, 10);
    chmodSync(ledgerDir, 0o777);
    writeFileSync(path.join(ledgerDir, `${id}.json`), JSON.stringify({ version: 1, nextFree: Date.now() + 1e12 }));
    expect(await new FileSlotStore(ledgerDir, { rules: SLOT_RULES }).book(id, 10)).toBe(0);
    expect(statSync(ledgerDir).mode & 0o777).toBe(0o700);
    writeFileSync(path.join(ledgerDir, `${id}.json`), "{not json");
    expect(await store.book(id, 10)).toBe(0);
  });

  it("a SIGKILLed lock holder does not stall the others: its dead pid frees the lock at once; a live one is waited for", async () => {
    const ledgerDir = path.join(dir, "killed");
    const id = "e".repeat(48);
    await new FileSlotStore(ledgerDir, { rules: SLOT_RULES }).book(id, 10);
    const lock = path.join(ledgerDir, `${id}.lock`);
    // A process that takes the ledger's lock (as a booking does) and then hangs holding it.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `require("fs").writeFileSync(process.argv[1], JSON.stringify({ host: require("os").hostname(), pid: process.pid, token: "held", at: Date.now() }), { flag: "wx", mode: 0o600 }); console.log("held"); setInterval(() => {}, 1000);`,
        lock,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));
    // The clock stands still: the lock never looks old, only a dead holder can free it.
    const frozen = Date.now();
    // Its waits between tries are counted (and really slept, briefly): the event to check on, not a delay.
    let waits = 0;
    let waitedFiveTimes!: () => void;
    const fiveWaits = new Promise<void>((resolve) => (waitedFiveTimes = resolve));
    const clock = clockWith({ now: () => frozen, sleep: async (ms) => {
      if (++waits === 5) waitedFiveTimes();
      await systemClock.sleep(ms);
    } });
    const store = new FileSlotStore(ledgerDir, { rules: SLOT_RULES, clock });
    let booked = false;
    const booking = store.book(id, 10).then((wait) => {
      booked = true;
      return wait;
    });
    await fiveWaits;
    expect(booked).toBe(false); // a live holder is waited for: five tries found it live
    holder.kill("SIGKILL");
    await booking;
    expect(booked).toBe(true);
    expect(readdirSync(ledgerDir).filter((name) => name.includes(".lock"))).toEqual([]);
  });

  it("another host's lock is broken only once it is older than any live holder keeps one", async () => {
    const ledgerDir = path.join(dir, "other-host");
    const id = "f".repeat(48);
    await new FileSlotStore(ledgerDir, { rules: SLOT_RULES }).book(id, 10);
    const time = fakeTime(Date.now());
    writeFileSync(path.join(ledgerDir, `${id}.lock`), JSON.stringify({ host: `not-${hostname()}`, pid: process.pid, token: "elsewhere", at: time.now() }));
    const store = new FileSlotStore(ledgerDir, { rules: SLOT_RULES, clock: time });
    const started = time.now();
    await store.book(id, 10);
    expect(time.now() - started).toBeGreaterThan(LOCK_STALE_MS);
  });

  it("a lock or ledger name planted as a symlink is not followed", async () => {
    const ledgerDir = path.join(dir, "planted");
    const id = "0".repeat(48);
    await new FileSlotStore(ledgerDir, { rules: SLOT_RULES }).book(id, 10);
    const target = path.join(dir, "victim.txt");
    writeFileSync(target, "precious\n");
    rmSync(path.join(ledgerDir, `${id}.json`));
    symlinkSync(target, path.join(ledgerDir, `${id}.json`));
    await new FileSlotStore(ledgerDir, { rules: SLOT_RULES }).book(id, 10);
    expect(readFileSync(target, "utf8")).toBe("precious\n");
  });
});

/** Two clients (as two processes would: each its own store connection and budget) send `perClient` requests at once. */
async function twoClientsSharingOneKey(storeOf: () => SlotStore, perClient: number): Promise<{ sent: number; limited: number; failed: number; budgetId: string }> {
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], rateLimit: { requests: 10, windowSeconds: 4 } });
  const stores = [storeOf(), storeOf()];
  // Slots for 80% of the limit (8 per window, not 9.7): a loaded machine may send a request a few hundred ms
  // late, into the next fixed window; two clients that did not share would still send 16 per window.
  const interval = slotIntervalMs({ requests: 10, windowMs: 4000 }, 0.8);
  const clients = stores.map(
    (store) => new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, rateBudget: new PacedRateBudget(store, budgetIdOf(server.url, KEY), interval) }),
  );
  try {
    await Promise.all(
      clients.flatMap((client, c) =>
        Array.from({ length: perClient }, (_, i) => client.getOrCreate({ name: `G ${c}-${i}`, user_group_id: `g-${c}-${i}`, mapping: {} })),
      ),
    );
    const journal = server.journal();
    return { budgetId: budgetIdOf(server.url, KEY), sent: journal.length, limited: journal.filter((e) => e.status === 429).length, failed: journal.filter((e) => e.status !== 200 && e.status !== 429).length };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(stores.map((store) => store.close()));
    await server.close();
  }
}

describe("clients sharing one key against the fake server's limit (10 per 4 s)", () => {
  let postgres: PostgresServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "rate-budget-shared-"));
    postgres = await startPostgres();
  });
  afterAll(() => {
    postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("through a file ledger: together within the limit, with few 429s", async () => {
    const ledgerDir = path.join(dir, "ledger");
    const result = await twoClientsSharingOneKey(() => new FileSlotStore(ledgerDir, { rules: SLOT_RULES }), 12);
    expect(result.failed).toBe(0);
    expect(result.sent - result.limited).toBe(24);
    expect(result.limited).toBeLessThanOrEqual(2);
    for (const text of filesUnder(ledgerDir)) expect(text).not.toContain(KEY);
  }, 60_000);

  it("through PostgreSQL: together within the limit, with few 429s, and the table never holds the key", async () => {
    const connection = postgres.backendUrl;
    const result = await twoClientsSharingOneKey(() => new PostgresSlotStore(connection, undefined, SLOT_RULES), 12);
    expect(result.failed).toBe(0);
    expect(result.sent - result.limited).toBe(24);
    expect(result.limited).toBeLessThanOrEqual(2);
    const { Client } = await import("pg");
    const client = new Client({ connectionString: connection });
    await client.connect();
    try {
      const rows = (await client.query("SELECT budget_id, next_free::text AS next_free FROM user_groups_rate_budget")).rows as Array<Record<string, string>>;
      expect(rows).toHaveLength(1);
      expect(rows[0]!.budget_id).toBe(result.budgetId);
      expect(JSON.stringify(rows)).not.toContain(KEY);
    } finally {
      await client.end();
    }
  }, 60_000);

  it("PostgreSQL: sessions racing to create one table all go on (createTablesIfMissing, which every shared store uses)", async () => {
    const { Client } = await import("pg");
    const sessions = Array.from({ length: 8 }, () => new Client({ connectionString: postgres.backendUrl }));
    await Promise.all(sessions.map((session) => session.connect()));
    try {
      // A fresh table each round, created by all eight sessions at once: the losers meet 23505, 42710 or 42P07.
      for (let round = 0; round < 5; round++) {
        const statement = `CREATE TABLE IF NOT EXISTS race_${round} (id text PRIMARY KEY)`;
        const outcomes = await Promise.allSettled(sessions.map((session) => createTablesIfMissing(session, [statement])));
        expect(outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
      }
      // Without the retry, sessions meet the race (here 23505 and 42710 were both seen): only these codes mean it.
      const codes = new Set<string>();
      for (let round = 0; round < 5; round++) {
        const statement = `CREATE TABLE IF NOT EXISTS bare_race_${round} (id text PRIMARY KEY)`;
        for (const outcome of await Promise.allSettled(sessions.map((session) => session.query(statement)))) {
          if (outcome.status === "rejected") codes.add(String((outcome.reason as { code?: unknown }).code));
        }
      }
      expect([...codes].every((code) => ["23505", "42710", "42P07"].includes(code)), [...codes].join(", ")).toBe(true);
    } finally {
      await Promise.all(sessions.map((session) => session.end()));
    }
  });

  it("PostgreSQL: a 429's hold reaches every sharer, and a row absurdly far ahead (a damaged table) is started again", async () => {
    const [a, b] = [new PostgresSlotStore(postgres.backendUrl, undefined, SLOT_RULES), new PostgresSlotStore(postgres.backendUrl, undefined, SLOT_RULES)];
    const id = "1".repeat(48);
    try {
      expect(await a.book(id, 100)).toBe(0);
      await a.hold(id, 30_000);
      const wait = await b.book(id, 100);
      expect(wait).toBeGreaterThan(20_000);
      expect(wait).toBeLessThanOrEqual(30_000);
      await b.hold(id, 1e12); // a bogus Retry-After: capped
      expect(await a.book(id, 100)).toBeLessThanOrEqual(MAX_HOLD_MS);
      const { Client } = await import("pg");
      const client = new Client({ connectionString: postgres.backendUrl });
      await client.connect();
      await client.query("UPDATE user_groups_rate_budget SET next_free = now() + interval '30 days' WHERE budget_id = $1", [id]);
      await client.end();
      expect(await b.book(id, 100)).toBe(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
