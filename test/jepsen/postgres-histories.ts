// Fault histories on a PostgreSQL backend (issue 32 item 6), as Jepsen tests
// systems: three replicas (each its own OS process group) ensure, remove and list
// colliding ids while one fault hits replica r1 (or the database); the checker
// replays the history against the service, every shard's state and the shard
// directory (testkit/jepsen/). Removes come from any replica. This declares the
// suite; faults-postgres*.test.ts each run a share of the kinds, so that vitest
// runs the shares side by side. Kinds npm test leaves out are listed, with why,
// in testkit/jepsen/fault-kinds.ts (JEPSEN_RUN_ALL=1 runs them anyway); the bench
// runs longer forms of all.
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

/** One history: its fault held this long (ms), and what it must show besides a valid verdict. */
export interface PostgresHistory {
  readonly kind: FaultKind;
  readonly faultMs: number;
  /** Another replica served within this long of r1's last lease renewal. */
  readonly serveWithinMs?: number;
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
    for (const { kind, faultMs, serveWithinMs } of histories) {
      const why = outOfNpmTest("postgres", kind);
      const bound = serveWithinMs ? `; served again within ${serveWithinMs / 1000} s of r1's last renewal` : "";
      it.skipIf(why !== undefined)(`${kind}: nothing lost, doubled or orphaned; every token the service's; every failure retryable and retried${bound}${why ? ` (${why})` : ""}`, async () => {
        await server.reset();
        const result = await runHistory({
          label: `pg-${kind}`,
          backend: "postgres",
          fault: kind,
          server,
          backendUrl: postgres.backendUrl,
          postgres,
          toxiproxy,
          workRoot: env.workDir,
          worker: WORKER,
          env: { ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "jepsen", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
          // One stack for a fault (every call contends for the stack r1 holds); shards of 3 for the race.
          ...(kind === "race" ? { shardSize: 3 } : {}),
          removeFrom: "any",
          warmupMs: 3_000,
          faultMs,
          afterMs: 3_000,
          seed: Number(process.env["JEPSEN_SEED"] ?? 32),
          log: (line) => console.log(line),
        });
        expect(result.problems).toEqual([]);
        expect(result.ops.length).toBeGreaterThan(5);
        // Another replica serves (an engine run's create or delete) within SERVE_AGAIN_BOUND_MS of r1's last lease
        // renewal (issue 32's target, 30 s, is reported by the history's log line). (The probe, one fresh sign-up, is reported, not held to it: the lease serves its waiters first come,
        // but the probe may wait behind the runs of the replicas queued before it, and measured 30.1 s once in the
        // bench; docs/fleet-replicas.md, "Waiters are served first come".)
        if (serveWithinMs !== undefined) expect(fromRenewal(result, result.timeToServeMs) ?? Infinity).toBeLessThanOrEqual(serveWithinMs);
      }, 240_000);
    }
  });
}
