// The conformance suite of the shared backend interface (provider/backends/backend.ts):
// what every adapter must do, whatever it keeps its state in. Each check is a
// plain function of a subject (an adapter and how to play its faults), so that
// `describeConformance` runs them all against a real adapter and a unit test
// runs each against an adapter broken on purpose (test/backends/file.unit.test.ts):
// a check that a broken adapter passes is a check that cannot fail.
//
// Adding a backend: a subject for it (a fresh backend URL, how a holder stops,
// how Pulumi's lock is planted) and one `describeConformance` call.
import { randomBytes, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { leaseRules } from "../../provider/automation/lease/record";
import {
  backendFor,
  type LeaseStore,
  type LeaseStoreOptions,
  RATE_BUDGET_ENV,
  type RunClaim,
  type RunRecord,
  runFenceFromEnv,
  type SharedBackend,
  type SlotStore,
  slotStoreAt,
} from "../../provider/backends";
import { SLOT_RULES } from "../../provider/client/rate-budget/budget";

export const PROJECT = "user-groups";

export interface ConformanceSubject {
  readonly kind: string;
  /** A backend URL for one check (a fresh directory; one server's database, the checks apart by their stacks). */
  freshUrl(): Promise<string>;
  /** The backend of a URL (default: the registry's, backendFor); a mutant wraps it. */
  open?(url: string): SharedBackend;
  /** The slot store a run's providers would use (default: the registry's, from the backend's rateBudgetEnv); a mutant wraps it. */
  slotStore?(backend: SharedBackend): SlotStore;
  /** Options the checks' lease stores get beyond the rules (short timings where leases expire by time). */
  readonly leaseOptions?: Omit<LeaseStoreOptions, "rules">;
  /** A claim of a holder that is about to stop for good (file: a pid of this host that runs no process). */
  stopping(claim: RunClaim): RunClaim;
  /** Waits until a holder that stopped renewing may be taken over (PostgreSQL: past its expiry). */
  expire(): Promise<void>;
  /** Whether the adapter fences older epochs (epochs in the records, a fence environment). */
  readonly fenced: boolean;
  /** Plants a lock of Pulumi's own on a stack, as Pulumi's CLI writes it. */
  plantPulumiLock(url: string, stack: string, lock: { readonly pid: number; readonly hostname: string; readonly timestamp: string }): Promise<void>;
}

/** What a check opens, closed after it. */
class Opened {
  readonly closers: (() => Promise<unknown>)[] = [];
  constructor(readonly subject: ConformanceSubject) {}

  backend(url: string): SharedBackend {
    const backend = this.subject.open?.(url) ?? backendFor(url);
    if (backend === undefined) throw new Error(`no adapter for ${url}`);
    return backend;
  }

  /** `ownTiming`: the adapter's own lease timing, not the subject's short one (the fence wants its margin). */
  lease(backend: SharedBackend, stack: string, waiterId = `waiter-${randomUUID()}`, ownTiming = false): LeaseStore {
    const { timing, ...options } = this.subject.leaseOptions ?? {};
    const store = backend.leaseStore(PROJECT, stack, { ...options, ...(timing && !ownTiming ? { timing } : {}), rules: leaseRules(), waiterId });
    this.closers.push(() => store.close());
    return store;
  }

  async close(): Promise<void> {
    for (const close of this.closers.reverse()) await close().catch(() => undefined);
  }
}

let claims = 0;
function claim(name: string): RunClaim {
  const at = Date.now();
  return { runId: `${name}-${++claims}-${randomUUID().slice(0, 8)}`, host: hostname(), pid: process.pid, startedAt: at, renewedAt: at };
}

const stackName = (what: string) => `${what}-${randomBytes(4).toString("hex")}`;

function acquired(outcome: Awaited<ReturnType<LeaseStore["tryAcquire"]>>): RunRecord {
  expect(outcome.acquired).toBe(true);
  return (outcome as { record: RunRecord }).record;
}

async function withOpened(subject: ConformanceSubject, check: (opened: Opened, url: string) => Promise<void>): Promise<void> {
  const opened = new Opened(subject);
  try {
    await check(opened, await subject.freshUrl());
  } finally {
    await opened.close();
  }
}

/** The checks, by what they hold. Each rejects when the subject breaks it. */
export const CONFORMANCE_CHECKS = {
  "of concurrent acquires exactly one wins; the others are told who holds it": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("race");
      const stores = Array.from({ length: 6 }, () => opened.lease(backend, stack));
      const outcomes = await Promise.all(stores.map((store, i) => store.tryAcquire(claim(`racer${i}`))));
      const winners = outcomes.filter((outcome) => outcome.acquired);
      expect(winners).toHaveLength(1);
      const winner = (winners[0] as { record: RunRecord }).record;
      for (const outcome of outcomes.filter((o) => !o.acquired)) {
        const holder = (outcome as { holder?: RunRecord }).holder;
        if (holder !== undefined) expect(holder.runId).toBe(winner.runId);
      }
    }),

  "epochs grow with every holder where the backend fences, and are absent where it cannot": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("epochs");
      const epochs: (number | undefined)[] = [];
      for (let i = 0; i < 3; i++) {
        const store = opened.lease(backend, stack);
        const record = acquired(await store.tryAcquire(claim(`holder${i}`)));
        epochs.push(record.epoch);
        await store.release(record);
      }
      if (subject.fenced) {
        expect(epochs.every((epoch) => typeof epoch === "number")).toBe(true);
        expect(epochs[1]!).toBeGreaterThan(epochs[0]!);
        expect(epochs[2]!).toBeGreaterThan(epochs[1]!);
      } else {
        // An epoch says "fenced" to the takeover (classifyLockHolder): a backend that cannot fence must not claim one.
        expect(epochs).toEqual([undefined, undefined, undefined]);
      }
    }),

  "only the holder writes: a store that never held it, or lost it, is refused": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("writes");
      const holder = opened.lease(backend, stack);
      const record = acquired(await holder.tryAcquire(subject.stopping(claim("holder"))));
      expect(await holder.write({ ...record, renewedAt: Date.now() })).toBe(true);
      const stranger = opened.lease(backend, stack);
      expect(await stranger.write({ ...record, runId: "stranger" })).toBe(false);
      expect(await stranger.write(record)).toBe(false);
      await subject.expire();
      const successor = opened.lease(backend, stack);
      const taken = acquired(await successor.tryAcquire(claim("successor")));
      expect(await holder.write({ ...record, renewedAt: Date.now() })).toBe(false);
      expect(await successor.write({ ...taken, renewedAt: Date.now() })).toBe(true);
    }),

  "a holder that stopped renewing is taken over, and the successor's record names it unfinished": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("takeover");
      const dead = opened.lease(backend, stack);
      const deadRecord = acquired(await dead.tryAcquire(subject.stopping(claim("dead"))));
      await subject.expire();
      const successor = opened.lease(backend, stack);
      const record = acquired(await successor.tryAcquire(claim("successor")));
      expect(record.unfinished.map((c) => c.runId)).toContain(deadRecord.runId);
      expect(record.released).toBe(false);
      // A holder that let go in good order is no dead run.
      await successor.release(record);
      const next = opened.lease(backend, stack);
      const after = acquired(await next.tryAcquire(claim("next")));
      expect(after.unfinished.map((c) => c.runId)).not.toContain(record.runId);
    }),

  "a released lease goes to the waiters first come: a later one cannot pass an earlier one": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("queue");
      const holder = opened.lease(backend, stack, "w0-holder");
      const record = acquired(await holder.tryAcquire(claim("holder")));
      const early = opened.lease(backend, stack, "w1-early");
      const late = opened.lease(backend, stack, "w2-late");
      expect((await early.tryAcquire(claim("early"))).acquired).toBe(false);
      expect((await late.tryAcquire(claim("late"))).acquired).toBe(false);
      await holder.release(record);
      expect((await late.tryAcquire(claim("late"))).acquired).toBe(false);
      acquired(await early.tryAcquire(claim("early")));
    }),

  "a directory claim is conditional: of two claimers of one group one wins, the other is told where it is": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("claims");
      const [a, b] = [backend.shardDirectory(PROJECT, stack), backend.shardDirectory(PROJECT, stack)];
      opened.closers.push(() => a.close(), () => b.close());
      const [byA, byB] = await Promise.all([a.claim(["default.g", "default.a-only"], 1), b.claim(["default.g", "default.b-only"], 2)]);
      const lost = [byA.get("default.g"), byB.get("default.g")].filter((at) => at !== undefined);
      expect(lost).toHaveLength(1);
      const entries = await a.read();
      const winner = entries.get("default.g");
      expect(winner === 1 ? byB.get("default.g") : byA.get("default.g")).toBe(winner);
      expect(entries.get("default.a-only")).toBe(1);
      expect(entries.get("default.b-only")).toBe(2);
      // assign writes only where there is no entry, with the plan it is given, and answers the plan.
      const plan = await a.assign((assigned) => new Map([...["default.g", "default.new"]].map((name) => [name, assigned.get(name) ?? 3])));
      expect(plan.get("default.g")).toBe(winner);
      expect((await b.read()).get("default.new")).toBe(3);
    }),

  "a directory forget drops only the entries that name its shard": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("forget");
      const directory = backend.shardDirectory(PROJECT, stack);
      opened.closers.push(() => directory.close());
      await directory.claim(["default.one"], 1);
      await directory.claim(["default.two"], 2);
      await directory.forget(["default.one", "default.two"], 2);
      expect(Object.fromEntries(await directory.read())).toEqual({ "default.one": 1 });
      expect(await directory.entriesOf(1)).toEqual(["default.one"]);
      await directory.forget(["default.one"], 1);
      expect((await directory.read()).size).toBe(0);
    }),

  "the slot store hands out no more slots than the budget, whoever books at once": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stores = Array.from({ length: 3 }, () => {
        const store = subject.slotStore?.(backend) ?? defaultSlotStore(backend);
        opened.closers.push(() => store.close());
        return store;
      });
      const budget = randomBytes(16).toString("hex");
      const intervalMs = 2_000;
      const starts = await Promise.all(
        Array.from({ length: 9 }, (_, i) => stores[i % stores.length]!.book(budget, intervalMs).then((waitMs) => Date.now() + waitMs)),
      );
      starts.sort((x, y) => x - y);
      // Each booking's start is measured on its own return (a little late); a second budget of margin for that.
      for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThan(intervalMs - 1_000);
    }),

  "Pulumi's lock of a stack is listed with its holder and removed, another stack's left alone": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const [stack, other] = [stackName("locked"), stackName("other")];
      const store = opened.lease(backend, stack);
      const otherStore = opened.lease(backend, other);
      expect(await store.pulumiLocks()).toEqual([]);
      const timestamp = new Date().toISOString();
      await subject.plantPulumiLock(url, stack, { pid: 4242, hostname: "pulumi-host", timestamp });
      await subject.plantPulumiLock(url, other, { pid: 4343, hostname: "pulumi-host", timestamp });
      const locks = await store.pulumiLocks();
      expect(locks.map(({ pid, hostname, timestamp: at }) => ({ pid, hostname, at }))).toEqual([{ pid: 4242, hostname: "pulumi-host", at: timestamp }]);
      await store.removePulumiLock(locks[0]!);
      expect(await store.pulumiLocks()).toEqual([]);
      expect((await otherStore.pulumiLocks()).map((lock) => lock.pid)).toEqual([4343]);
    }),

  "the fence: a fencing backend gives a run's processes a fence that refuses a stale epoch; one that cannot gives none": (subject: ConformanceSubject) =>
    withOpened(subject, async (opened, url) => {
      const backend = opened.backend(url);
      const stack = stackName("fence");
      const first = opened.lease(backend, stack, undefined, true);
      const record = acquired(await first.tryAcquire(claim("first")));
      const env = first.fenceEnv?.(record);
      if (!subject.fenced) {
        expect(env).toBeUndefined();
        return;
      }
      expect(env).toBeDefined();
      expect(env!["PULUMI_BACKEND_URL"]).toBeDefined();
      const fence = runFenceFromEnv(env!);
      expect(fence).toBeDefined();
      await fence!.check();
      await first.release(record);
      const second = opened.lease(backend, stack, undefined, true);
      const taken = acquired(await second.tryAcquire(claim("second")));
      expect(taken.epoch).toBeGreaterThan(record.epoch!);
      await expect(fence!.check()).rejects.toMatchObject({ code: "run_fenced" });
      await runFenceFromEnv(second.fenceEnv!(taken)!)!.check();
    }),
} as const;

export type ConformanceCheck = keyof typeof CONFORMANCE_CHECKS;

function defaultSlotStore(backend: SharedBackend): SlotStore {
  const env = backend.rateBudgetEnv();
  const store = slotStoreAt(env[RATE_BUDGET_ENV.store]!, env[RATE_BUDGET_ENV.table], SLOT_RULES);
  if (store === undefined) throw new Error(`no slot store at ${env[RATE_BUDGET_ENV.store]}`);
  return store;
}

/** Declares every check against one adapter. `subject` is made once (before the checks run). */
export function describeConformance(name: string, subject: () => ConformanceSubject, timeoutMs = 30_000): void {
  describe(`the shared backend interface: ${name}`, () => {
    for (const [check, run] of Object.entries(CONFORMANCE_CHECKS)) {
      it(check, () => run(subject()), timeoutMs);
    }
  });
}
