// Fault histories on a PostgreSQL backend (issue 32 item 6), as Jepsen tests
// systems: three replicas (each its own OS process group) ensure, remove and
// list colliding ids while one fault hits replica r1 (or the database); the
// checker replays the history against the service, every shard's state and the
// shard directory (testkit/jepsen/). Removes come from any replica. Kinds npm
// test leaves out are listed, with why, in testkit/jepsen/fault-kinds.ts
// (JEPSEN_RUN_ALL=1 runs them anyway); the bench runs longer forms of all.
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

/** Each history: its fault held this long (ms), and what it must show besides a valid verdict. */
const HISTORIES: ReadonlyArray<{ kind: FaultKind; faultMs: number; serveWithinMs?: number }> = [
  { kind: "pg-restart", faultMs: 0 },
  { kind: "kill", faultMs: 0, serveWithinMs: 30_000 },
  { kind: "partition-reset", faultMs: 12_000, serveWithinMs: 30_000 },
  { kind: "partition-refuse", faultMs: 12_000, serveWithinMs: 30_000 },
  // Held past 30 s: another replica must serve before the fault heals.
  { kind: "pause", faultMs: 35_000, serveWithinMs: 30_000 },
  { kind: "partition-blackhole", faultMs: 35_000, serveWithinMs: 30_000 },
  { kind: "race", faultMs: 0 },
];

describe.skipIf(process.platform !== "linux")("fault histories on PostgreSQL", () => {
  for (const { kind, faultMs, serveWithinMs } of HISTORIES) {
    const why = outOfNpmTest("postgres", kind);
    it.skipIf(why !== undefined)(`${kind}: nothing lost, doubled or orphaned; every token the service's; every failure retryable and retried${serveWithinMs ? `; served again within ${serveWithinMs / 1000} s of r1's last renewal` : ""}${why ? ` (${why})` : ""}`, async () => {
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
        warmupMs: 4_000,
        faultMs,
        afterMs: 5_000,
        seed: Number(process.env["JEPSEN_SEED"] ?? 32),
        log: (line) => console.log(line),
      });
      expect(result.problems).toEqual([]);
      expect(result.ops.length).toBeGreaterThan(5);
      // Issue 32's bound: another replica serves (an engine run's create or delete) within 30 s of r1's last lease
      // renewal. (The probe, one fresh sign-up, is reported, not held to it: the lease serves its waiters in no set
      // order, so under load one call may wait for other replicas' runs; docs/fleet-replicas.md.)
      if (serveWithinMs !== undefined) expect(fromRenewal(result, result.timeToServeMs) ?? Infinity).toBeLessThanOrEqual(serveWithinMs);
    }, 240_000);
  }
});
