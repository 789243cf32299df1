// Fault histories on a file backend (issue 32 item 6), as Jepsen tests systems:
// three replicas (each its own OS process group, on one host, sharing one
// backend directory) ensure, remove and list colliding ids while one fault hits
// replica r1; the checker replays the history against the service, every
// shard's state and the shard directory (testkit/jepsen/). Kinds that wait for
// another branch are listed in testkit/jepsen/fault-kinds.ts (JEPSEN_RUN_ALL=1
// runs them anyway).
//
// "slow-disk": r1's engine is frozen (SIGSTOP of its `pulumi` process) within
// milliseconds of the first change to the stack's checkpoint files it makes
// while it holds the stack, and continued after the fault's time: a checkpoint
// write that takes that long, as a stalled disk or NFS server makes it. (No
// FUSE or LD_PRELOAD: the engine is a static Go binary.)
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { awaiting, type FaultKind } from "../../testkit/jepsen/fault-kinds";
import { fromRenewal, runHistory } from "../../testkit/jepsen/run-history";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "jepsen-file-key-0001";
const WORKER = path.join(__dirname, "../../testkit/jepsen/replica-worker.cjs");
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("jepsen-file");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

const HISTORIES: ReadonlyArray<{ kind: FaultKind; faultMs: number; serveWithinMs?: number }> = [
  { kind: "kill", faultMs: 0, serveWithinMs: 30_000 },
  { kind: "slow-disk", faultMs: 12_000 },
  // Held past 30 s: another replica must serve before the fault heals.
  { kind: "pause", faultMs: 32_000, serveWithinMs: 30_000 },
  { kind: "stall-node", faultMs: 32_000, serveWithinMs: 30_000 },
  { kind: "race", faultMs: 0 },
];

describe.skipIf(process.platform !== "linux")("fault histories on a file backend", () => {
  for (const { kind, faultMs, serveWithinMs } of HISTORIES) {
    const why = awaiting("file", kind);
    it.skipIf(why !== undefined)(`${kind}: nothing lost, doubled or orphaned; every token the service's; every failure retryable and retried${serveWithinMs ? `; served again within ${serveWithinMs / 1000} s of r1's last renewal` : ""}${why ? ` (${why})` : ""}`, async () => {
      await server.reset();
      const result = await runHistory({
        label: `file-${kind}`,
        backend: "file",
        fault: kind,
        server,
        backendUrl: `file://${env.backendDir}`,
        workRoot: env.workDir,
        worker: WORKER,
        env: { ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "jepsen", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
        // One stack for a fault (every call contends for the stack r1 holds); shards of 3 for the race.
        ...(kind === "race" ? { shardSize: 3 } : {}),
        removeFrom: kind === "race" || awaiting("file", "race") === undefined ? "any" : "owner",
        warmupMs: 4_000,
        faultMs,
        afterMs: 5_000,
        // A slow request for the stalled node: its engine goes on for this long while its lease is not renewed.
        ...(kind === "stall-node" ? { holdDelayMs: 32_000 } : {}),
        seed: Number(process.env["JEPSEN_SEED"] ?? 32),
        log: (line) => console.log(line),
      });
      expect(result.problems).toEqual([]);
      expect(result.ops.length).toBeGreaterThan(5);
      // Issue 32's bound: a fresh sign-up at another replica served within 30 s of r1's last lease renewal.
      if (serveWithinMs !== undefined) expect(fromRenewal(result, result.probeServedMs) ?? Infinity).toBeLessThanOrEqual(serveWithinMs);
      if (kind === "slow-disk") expect(result.faults[0]?.detail).toMatch(/frozen at a checkpoint write/);
    }, 240_000);
  }
});
