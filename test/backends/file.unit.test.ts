// The conformance suite of the shared backend interface (conformance.ts) against
// the file adapter (provider/backends/file/), and against that adapter broken in
// one way for each check: every check must fail on its mutant, so none of them
// is a check that cannot fail.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { backendFor, type DirectoryStore, type LeaseStore, RATE_BUDGET_ENV, type SharedBackend, type SlotStore, slotStoreAt } from "../../provider/backends";
import { SLOT_RULES } from "../../provider/client/rate-budget/budget";
import { CONFORMANCE_CHECKS, type ConformanceCheck, type ConformanceSubject, describeConformance, PROJECT } from "./conformance";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A pid no process of this host has (above Linux's largest pid_max). */
const DEAD_PID = 4_194_304 + 1;

const fileSubject: ConformanceSubject = {
  kind: "file",
  freshUrl: async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "conformance-file-"));
    dirs.push(dir);
    return `file://${dir}`;
  },
  stopping: (claim) => ({ ...claim, pid: DEAD_PID }),
  expire: async () => undefined,
  fenced: false,
  plantPulumiLock: async (url, stack, lock) => {
    const dir = path.join(url.slice("file://".length), ".pulumi", "locks", "organization", PROJECT, stack);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${randomUUID()}.json`), JSON.stringify({ ...lock, username: "someone" }));
  },
};

describeConformance("file", () => fileSubject);

/** The file adapter with its lease stores, directories or slot stores changed by `change`. */
function mutant(change: {
  readonly lease?: (store: LeaseStore) => Partial<LeaseStore>;
  readonly directory?: (store: DirectoryStore) => Partial<DirectoryStore>;
  readonly slots?: (store: SlotStore) => Partial<SlotStore>;
  readonly subject?: Partial<ConformanceSubject>;
}): ConformanceSubject {
  const wrap = <T extends object>(inner: T, parts: Partial<T> | undefined): T =>
    new Proxy(inner, { get: (target, key) => (parts && key in parts ? parts[key as keyof T] : Reflect.get(target, key, target)) });
  return {
    ...fileSubject,
    open: (url) => {
      const backend = backendFor(url)!;
      return {
        ...backend,
        leaseStore: (project, stack, options) => {
          const store = backend.leaseStore(project, stack, options);
          return wrap(store, change.lease?.(store));
        },
        shardDirectory: (project, stack, options) => {
          const store = backend.shardDirectory(project, stack, options);
          return wrap(store, change.directory?.(store));
        },
      } satisfies SharedBackend;
    },
    slotStore: (backend) => {
      const env = backend.rateBudgetEnv();
      const store = defaultStore(env);
      return wrap(store, change.slots?.(store));
    },
    ...change.subject,
  };
}

const defaultStore = (env: Record<string, string>) => slotStoreAt(env[RATE_BUDGET_ENV.store]!, undefined, SLOT_RULES)!;

/** A record as a successor would write it, taken without asking (the mutants' "win"). */
const grab = (store: LeaseStore): Partial<LeaseStore> => ({
  tryAcquire: async (me) => {
    const outcome = await store.tryAcquire(me, { breakLive: true });
    return outcome.acquired ? outcome : { acquired: true as const, record: { version: 1, ...me, expiresAt: me.renewedAt + 20_000, released: false, unfinished: [], adopt: [] } };
  },
});

const MUTANTS: Record<ConformanceCheck, ConformanceSubject> = {
  // Every acquire wins: no exclusive create.
  "of concurrent acquires exactly one wins; the others are told who holds it": mutant({ lease: grab }),
  // A file backend claiming it fences (an epoch would tell the takeover "fenced").
  "epochs grow with every holder where the backend fences, and are absent where it cannot": mutant({ subject: { fenced: true } }),
  // Every write is taken for the holder's.
  "only the holder writes: a store that never held it, or lost it, is refused": mutant({ lease: (store) => ({ write: async (record) => (await store.write(record)) || true }) }),
  // The dead holder's record dropped: the successor starts afresh, its leftovers forgotten.
  "a holder that stopped renewing is taken over, and the successor's record names it unfinished": mutant({
    lease: (store) => ({
      tryAcquire: async (me, options) => {
        const outcome = await store.tryAcquire(me, options);
        return outcome.acquired ? { acquired: true as const, record: { ...outcome.record, unfinished: [] } } : outcome;
      },
    }),
  }),
  // A refused waiter leaves the queue at once: whoever tries first after a release wins.
  "a released lease goes to the waiters first come: a later one cannot pass an earlier one": mutant({
    lease: (store) => ({
      tryAcquire: async (me, options) => {
        const outcome = await store.tryAcquire(me, options);
        if (!outcome.acquired) await store.close();
        return outcome;
      },
    }),
  }),
  // A claim that overwrites: both claimers win.
  "a directory claim is conditional: of two claimers of one group one wins, the other is told where it is": mutant({
    directory: (store) => ({
      claim: async (names, shard) => {
        await store.repair(new Map(names.map((name) => [name, shard])));
        return new Map();
      },
    }),
  }),
  // A forget that drops whatever the entry says.
  "a directory forget drops only the entries that name its shard": mutant({
    directory: (store) => ({
      forget: async (names) => {
        const entries = await store.read();
        for (const name of names) {
          const at = entries.get(name);
          if (at !== undefined) await store.forget([name], at);
        }
      },
    }),
  }),
  // Every booking may go at once.
  "the slot store hands out no more slots than the budget, whoever books at once": mutant({ slots: (store) => ({ book: async (id, interval) => Math.min(0, await store.book(id, interval)) }) }),
  // Pulumi's locks not seen.
  "Pulumi's lock of a stack is listed with its holder and removed, another stack's left alone": mutant({ lease: () => ({ pulumiLocks: async () => [] }) }),
  // A fence environment where nothing can be fenced.
  "the fence: a fencing backend gives a run's processes a fence that refuses a stale epoch; one that cannot gives none": mutant({ lease: () => ({ fenceEnv: () => ({}) }) }),
};

describe("every conformance check fails on an adapter broken for it", () => {
  for (const [check, run] of Object.entries(CONFORMANCE_CHECKS)) {
    it(check, async () => {
      const error = await run(MUTANTS[check as ConformanceCheck]).then(() => undefined, (e: unknown) => e);
      // Failed by one of its expectations, not by an accident of the mutant (a TypeError would prove nothing).
      expect((error as Error | undefined)?.name).toBe("AssertionError");
    });
  }

  it("the registry chooses by scheme, and knows no other backend", () => {
    expect(backendFor("file:///srv/state")?.kind).toBe("file");
    expect(backendFor("postgres://db.example/state")?.kind).toBe("postgres");
    expect(backendFor("postgresql://db.example/state")?.kind).toBe("postgres");
    expect(backendFor("s3://bucket-name/state")?.kind).toBe("s3");
    expect(backendFor("gs://bucket-name/state")?.kind).toBe("gs");
    expect(backendFor("https://api.pulumi.com")).toBeUndefined();
  });
});
