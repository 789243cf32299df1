// Fault histories on S3 (issue 42 item 5; moto's server, started here on
// 127.0.0.1), npm test's short form: one history (three replicas and a probe,
// one start, one drain, one check of the end) whose replica r1 is hit by one
// fault after another while it holds the stack (each a round: r1 in a run, the
// fault, the heal, load; removes from any replica race ensures throughout):
// - pause: SIGSTOP of r1's processes, held until another replica has been served
//   (its lease expires 20 s + 1 s after its last renewal, the store's clock; its
//   engine works on a private copy whose late commit the store refuses);
// - partition-reset: r1 cut off from the store through Toxiproxy (every connection reset;
//   out of npm test, fault-kinds.ts says why: JEPSEN_RUN_ALL=1 runs it as a round here);
// - store-restart: every replica's connections to the store reset and refused for 2 s
//   (moto keeps its objects in memory only: to its clients a restart is this);
// - kill: SIGKILL of r1's process group mid-run (last: taken over once its lease
//   expires, what it created adopted from the checkpoint it committed before each request).
// Then both checkers: ours (nothing lost, doubled or orphaned, every token the
// service's, every failure retryable and retried) and porcupine (linearizable per
// id). Kinds left out here, with why: testkit/jepsen/fault-kinds.ts; the bench
// runs a longer history of each kind alone (bench/faults.ts).
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { type FaultKind, outOfNpmTest } from "../../testkit/jepsen/fault-kinds";
import { fromRenewal, runHistory } from "../../testkit/jepsen/run-history";
import { startToxiproxy, type Toxiproxy } from "../../testkit/jepsen/toxiproxy";
import { type ObjectStore, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "jepsen-s3-key-0001";
const WORKER = path.join(__dirname, "../../testkit/jepsen/replica-worker.cjs");
/**
 * The bound "served again" is held to, from r1's last lease renewal: the lease expires 20 s + 1 s after it (the
 * store's clock), a waiter tries again within 5 s, then the takeover and one engine run up to its first create or
 * delete: 30 s of margin for those on a loaded 2-core machine (as PostgreSQL's SERVE_AGAIN_BOUND_MS). Issue 42's
 * 30 s is the target the runs are reported against.
 */
const SERVE_AGAIN_BOUND_MS = 21_000 + 5_000 + 30_000;

let server: FakeServer;
let s3: ObjectStore;
let toxiproxy: Toxiproxy;
let env: PulumiTestEnv;
beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  s3 = await startS3();
  toxiproxy = await startToxiproxy();
  env = createPulumiTestEnv("jepsen-s3");
  // The checker's own reads of the bucket (leases, directory) take the credentials from this process's environment.
  Object.assign(process.env, s3.env);
}, 600_000);
afterAll(async () => {
  await toxiproxy?.stop();
  await s3?.stop();
  await server?.close();
  env?.cleanup();
});

describe.skipIf(process.platform !== "linux")("fault histories on S3 (moto)", () => {
  const all: ReadonlyArray<{ readonly kind: FaultKind; readonly faultMs: number; readonly healOnceServed?: boolean }> = [
    { kind: "pause", faultMs: 50_000, healOnceServed: true },
    { kind: "partition-reset", faultMs: 8_000 },
    { kind: "store-restart", faultMs: 0 },
    { kind: "kill", faultMs: 0 },
  ];
  const rounds = all.filter((round) => outOfNpmTest("s3", round.kind) === undefined);
  it(`${rounds.map((r) => r.kind).join(", then ")} (the pause served while it holds): nothing lost, doubled or orphaned; every token the service's; linearizable per id`, async () => {
    const bucket = "jepsen-s3";
    await s3.createBucket(bucket);
    const backendUrl = s3.backendUrl(bucket);
    const result = await runHistory({
      label: "s3-rounds",
      backend: "s3",
      fault: rounds[0]!.kind,
      faultMs: rounds[0]!.faultMs,
      healOnceServed: true,
      thenFaults: rounds.slice(1),
      server,
      backendUrl,
      storeAddress: new URL(`http://${/endpoint=([^&]+)/.exec(backendUrl)![1]!}`).host,
      toxiproxy,
      workRoot: env.workDir,
      worker: WORKER,
      env: { ...env.envVars, ...s3.env, PULUMI_CONFIG_PASSPHRASE: "jepsen", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
      removeFrom: "any",
      warmupMs: 3_000,
      afterMs: 3_000,
      seed: Number(process.env["JEPSEN_SEED"] ?? 42),
      log: (line) => console.log(line),
    });
    expect(result.problems).toEqual([]);
    expect(result.ops.length).toBeGreaterThan(5);
    expect(result.rounds.map((r) => r.fault)).toEqual(rounds.map((r) => r.kind));
    const pause = result.rounds.find((r) => r.fault === "pause");
    const kill = result.rounds.find((r) => r.fault === "kill");
    // Another replica served while r1 was paused (the pause healed on that), within the bound of r1's last renewal.
    expect(pause!.timeToServeMs ?? Infinity, "pause: served while it held").toBeLessThanOrEqual(pause!.event.healedAt! - pause!.event.startedAt);
    expect(fromRenewal(pause!, pause!.timeToServeMs) ?? Infinity, "pause: served again, from r1's last renewal").toBeLessThanOrEqual(SERVE_AGAIN_BOUND_MS);
    expect(fromRenewal(kill!, kill!.timeToServeMs) ?? Infinity, "kill: served again, from r1's last renewal").toBeLessThanOrEqual(SERVE_AGAIN_BOUND_MS);
  }, 600_000);
});
