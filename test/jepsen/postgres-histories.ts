// Fault histories on a PostgreSQL backend (issue 32 item 6), as Jepsen tests
// systems: three replicas (each its own OS process group) ensure, remove and list
// colliding ids while one fault hits replica r1 (or the database); the checker
// replays the history against the service, every shard's state and the shard
// directory (testkit/jepsen/). Removes come from any replica. This declares the
// suite (faults-postgres.test.ts): a history may carry several faults one after
// another (rounds: one start of the replicas, one drain, one check of the end for
// them all: npm test's short form). Kinds npm test leaves out are listed, with
// why, in testkit/jepsen/fault-kinds.ts (JEPSEN_RUN_ALL=1 runs them anyway); the
// bench runs a longer history of each kind alone.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { startPostgres, type PostgresServer } from "../../testkit/postgres";
import { type FaultKind, outOfNpmTest } from "../../testkit/jepsen/fault-kinds";
import { fromRenewal, runHistory } from "../../testkit/jepsen/run-history";
import { startToxiproxy, type Toxiproxy } from "../../testkit/jepsen/toxiproxy";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "jepsen-postgres-key-0001";
const WORKER = path.join(__dirname, "../../testkit/jepsen/replica-worker.cjs");

/**
 * The bound a history holds "served again" to, from r1's last lease renewal: what the design guarantees, with margin.
 * The lease expires 10 s after that renewal (PG_LEASE_TIMING.ttlMs, the database's clock); a waiter tries again
 * within 5 s (the lock wait's longest backoff); then the takeover and one engine run up to the first create or
 * delete, which no design bounds: 30 s of margin for them on a loaded 2-core machine. Issue 32's 30 s is the target
 * the runs are measured against and reported (docs/fleet-replicas.md; 30.4 s once for the black hole), not a bound a
 * test can hold without failing now and then with nothing wrong.
 */
export const SERVE_AGAIN_BOUND_MS = 10_000 + 5_000 + 30_000;

/** One fault of a history: held this long (ms), and what it must show besides a valid verdict. */
export interface PostgresFault {
  readonly kind: FaultKind;
  readonly faultMs: number;
  /** Another replica served within this long of r1's last lease renewal. */
  readonly serveWithinMs?: number;
  /**
   * Another replica is served while the fault still holds: the fault is healed on that event (`faultMs` at the
   * latest), not after a fixed time, so a pause or a black hole lasts as long as the takeover needs.
   */
  readonly servedWhileHeld?: boolean;
}

/** One history: its first fault, and the faults after it (each a round of its own, in this order). */
export interface PostgresHistory extends PostgresFault {
  readonly then?: readonly PostgresFault[];
}

/** Declares the fault histories of these kinds (one PostgreSQL, Toxiproxy and fake server for them all). */
export function postgresHistories(title: string, histories: readonly PostgresHistory[]): void {
  let server: FakeServer;
  let postgres: PostgresServer;
  let toxiproxy: Toxiproxy;
  let env: PulumiTestEnv;

  beforeAll(async () => {
    server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
    postgres = await startPostgres();
    toxiproxy = await startToxiproxy();
    env = createPulumiTestEnv("jepsen-pg");
  });
  afterAll(async () => {
    await toxiproxy?.stop();
    await server?.close();
    postgres?.stop();
    env?.cleanup();
  });

  describe.skipIf(process.platform !== "linux")(title, () => {
    for (const history of histories) {
      // The kinds npm test leaves out are dropped from a history of several; a history of one is skipped, saying why.
      const rounds = [history, ...(history.then ?? [])].filter((f, i, all) => all.length === 1 || outOfNpmTest("postgres", f.kind) === undefined);
      const why = rounds.length === 1 ? outOfNpmTest("postgres", rounds[0]!.kind) : undefined;
      const [first, ...then] = rounds as [PostgresFault, ...PostgresFault[]];
      const shows = (f: PostgresFault) =>
        (f.serveWithinMs ? `; served again within ${f.serveWithinMs / 1000} s of r1's last renewal` : "") + (f.servedWhileHeld ? ", while the fault still holds" : "");
      const title = rounds.length === 1 ? `${first.kind}${shows(first)}` : rounds.map((f) => `${f.kind}${shows(f).replace(/^; /, " (")}${shows(f) ? ")" : ""}`).join(", then ");
      it.skipIf(why !== undefined)(`${title}: nothing lost, doubled or orphaned; every token the service's; every failure retryable and retried${why ? ` (${why})` : ""}`, async () => {
        await server.reset();
        const result = await runHistory({
          // Short: the label names the stack, its ids and the replicas' work directories (a long one fails the runs).
          label: rounds.length === 1 ? `pg-${first.kind}` : "pg-rounds",
          backend: "postgres",
          fault: first.kind,
          server,
          backendUrl: postgres.backendUrl,
          postgres,
          toxiproxy,
          workRoot: env.workDir,
          worker: WORKER,
          env: { ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "jepsen", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
          // One stack for a fault (every call contends for the stack r1 holds); shards of 3 for the race.
          ...(first.kind === "race" ? { shardSize: 3 } : {}),
          removeFrom: "any",
          warmupMs: 3_000,
          faultMs: first.faultMs,
          ...(first.servedWhileHeld ? { healOnceServed: true } : {}),
          thenFaults: then.map((f) => ({ kind: f.kind, faultMs: f.faultMs, ...(f.servedWhileHeld ? { healOnceServed: true } : {}) })),
          afterMs: 3_000,
          seed: Number(process.env["JEPSEN_SEED"] ?? 32),
          log: (line) => console.log(line),
        });
        expect(result.problems).toEqual([]);
        expect(result.ops.length).toBeGreaterThan(5);
        // Every fault was injected, in its round.
        const faulted = first.kind === "race" || first.kind === "none" ? [] : rounds.map((f) => f.kind);
        expect(result.rounds.map((r) => r.fault)).toEqual(faulted);
        for (const [i, f] of (faulted.length > 0 ? rounds : []).entries()) {
          const round = result.rounds[i]!;
          // Another replica serves (an engine run's create or delete) within SERVE_AGAIN_BOUND_MS of r1's last lease
          // renewal (issue 32's target, 30 s, is reported by the history's log line). (The probe, one fresh sign-up, is reported, not held to it: the lease serves its waiters first come,
          // but the probe may wait behind the runs of the replicas queued before it, and measured 30.1 s once in the
          // bench; docs/fleet-replicas.md, "Waiters are served first come".)
          if (f.serveWithinMs !== undefined) expect(fromRenewal(round, round.timeToServeMs) ?? Infinity, `${f.kind}: served again, from r1's last renewal`).toBeLessThanOrEqual(f.serveWithinMs);
          if (f.servedWhileHeld) expect(round.timeToServeMs ?? Infinity, `${f.kind}: served while it held`).toBeLessThanOrEqual(round.event.healedAt! - round.event.startedAt);
        }
      }, 150_000 + 100_000 * rounds.length);
    }
  });
}
