// Fault histories on a file backend (issue 32 item 6), as Jepsen tests systems:
// three replicas (each its own OS process group, on one host, sharing one
// backend directory) ensure, remove and list colliding ids while one fault hits
// replica r1; the checker replays the history against the service, every
// shard's state and the shard directory (testkit/jepsen/). Removes come from
// any replica. npm test's short form: one history whose r1 meets a slow disk, then
// (on another host) a stalled Node, one fault after the other (rounds: the
// replicas start once, the end is checked once), and a history of removes racing
// ensures. Kinds npm test leaves out (too slow by design, or covered) are listed,
// with why, in testkit/jepsen/fault-kinds.ts (JEPSEN_RUN_ALL=1 runs them anyway);
// the bench runs a longer history of each kind alone.
//
// "slow-disk": r1's engine is frozen (SIGSTOP of its `pulumi` process) within
// milliseconds of the first change to the stack's checkpoint files it makes
// while it holds the stack, and continued after the fault's time: a checkpoint
// write that takes that long, as a stalled disk or NFS server makes it. (No
// FUSE or LD_PRELOAD: the engine is a static Go binary.)
import { spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { type FaultKind, outOfNpmTest } from "../../testkit/jepsen/fault-kinds";
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

/** Whether this machine lets a process have a host name of its own (an unprivileged user namespace, or root). */
function canUnshare(): boolean {
  return spawnSync("unshare", ["--user", "--map-root-user", "--uts", "true"], { stdio: "ignore" }).status === 0;
}

/**
 * Each fault: held this long (ms), and what it must show besides a valid verdict. `neverTakenOver`: r1's run is alive
 * (paused, or its Node stalled while its engine goes on), and a file backend cannot fence, so the others must never
 * take it over: none of them is served while its fault lasts (docs/fleet-replicas.md, "What survives what"; a person
 * decides: `recover --break-lease`).
 */
interface FileFault {
  readonly kind: FaultKind;
  readonly faultMs: number;
  readonly serveWithinMs?: number;
  readonly neverTakenOver?: boolean;
  readonly killAfterAnswer?: boolean;
}

/**
 * Each history: its first fault, the faults after it (rounds of one history: one start of the replicas, one check of
 * the end: npm test's short form), and `elsewhere`: r1 runs "on another host" (its own UTS namespace and host name:
 * no replica can check its pid), for the whole history.
 */
const HISTORIES: ReadonlyArray<FileFault & { then?: readonly FileFault[]; elsewhere?: boolean }> = [
  // A checkpoint write that stalls, then issue 32's "B, as another host": r1's Node stalls past its lease's expiry
  // (20 s) while its engine goes on; never taken over.
  { kind: "slow-disk", faultMs: 10_000, then: [{ kind: "stall-node", faultMs: 25_000, neverTakenOver: true }], elsewhere: true },
  // r1 killed the moment its ensure is answered (record-first: the group in the run record, not yet in the state).
  { kind: "kill", faultMs: 0, serveWithinMs: 30_000, killAfterAnswer: true },
  // Slow by design (out of npm test: testkit/jepsen/fault-kinds.ts): nobody serves until r1 resumes.
  { kind: "pause", faultMs: 32_000, neverTakenOver: true },
  { kind: "stall-node", faultMs: 32_000, neverTakenOver: true },
  { kind: "race", faultMs: 0 },
];

describe.skipIf(process.platform !== "linux")("fault histories on a file backend", () => {
  const unshare = process.platform === "linux" && canUnshare();
  for (const history of HISTORIES) {
    // On a machine that cannot give r1 a host name of its own, a history "on another host" keeps its first fault only (r1 on this host).
    const elsewhere = history.elsewhere === true && unshare;
    const rounds: FileFault[] = [history, ...(history.elsewhere && !unshare ? [] : (history.then ?? []))];
    const why = history.then ? undefined : outOfNpmTest("file", history.kind);
    const title = rounds.map((f) => `${f.kind}${elsewhere && f.kind === "stall-node" ? " on another host" : ""}${f.neverTakenOver ? " (never taken over while it runs)" : ""}${f.serveWithinMs ? ` (served again within ${f.serveWithinMs / 1000} s of r1's last renewal)` : ""}`).join(", then ");
    it.skipIf(why !== undefined)(`${title}: nothing lost, doubled or orphaned; every token the service's; every failure retryable and retried${why ? ` (${why})` : ""}`, async () => {
      const [first, ...then] = rounds as [FileFault, ...FileFault[]];
      await server.reset();
      const result = await runHistory({
        // Short: the label names the stack, its ids and the replicas' work directories (a long one fails the runs).
        label: `file-${rounds.length === 1 ? first.kind : "rounds"}${elsewhere ? "-elsewhere" : ""}`,
        backend: "file",
        fault: first.kind,
        server,
        backendUrl: `file://${env.backendDir}`,
        workRoot: env.workDir,
        worker: WORKER,
        env: { ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "jepsen", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
        // One stack for a fault (every call contends for the stack r1 holds); shards of 3 for the race.
        ...(first.kind === "race" ? { shardSize: 3 } : {}),
        removeFrom: "any",
        warmupMs: 3_000,
        faultMs: first.faultMs,
        afterMs: 3_000,
        // A slow request for the stalled node: its engine goes on for this long while its lease is not renewed.
        ...(first.kind === "stall-node" ? { holdDelayMs: first.faultMs } : {}),
        ...(first.killAfterAnswer ? { killAfterAnswer: true } : {}),
        thenFaults: then.map((f) => ({ kind: f.kind, faultMs: f.faultMs, ...(f.kind === "stall-node" ? { holdDelayMs: f.faultMs } : {}) })),
        ...(elsewhere ? { otherHost: ["r1"] } : {}),
        seed: Number(process.env["JEPSEN_SEED"] ?? 32),
        log: (line) => console.log(line),
      });
      expect(result.problems).toEqual([]);
      expect(result.ops.length).toBeGreaterThan(5);
      const faulted = first.kind === "race" ? [] : rounds;
      expect(result.rounds.map((r) => r.fault)).toEqual(faulted.map((f) => f.kind));
      for (const [i, f] of faulted.entries()) {
        const round = result.rounds[i]!;
        // Issue 32's bound: another replica serves (an engine run's create or delete) within 30 s of r1's last lease
        // renewal. (The probe, one fresh sign-up, is reported, not held to it: the lease serves its waiters in no set
        // order, so under load one call may wait for other replicas' runs; docs/fleet-replicas.md.)
        if (f.serveWithinMs !== undefined) expect(fromRenewal(round, round.timeToServeMs) ?? Infinity, `${f.kind}: served again`).toBeLessThanOrEqual(f.serveWithinMs);
        if (f.kind === "slow-disk") expect(round.event.detail).toMatch(/frozen at a checkpoint write/);
        if (f.neverTakenOver) {
          // r1's lease went unrenewed past the heal's time (a file lease lives 20 s without renewal), yet nobody ran on
          // the stack until r1 went on: its pid is alive (or, on another host, cannot be checked).
          expect(round.lastRenewalBeforeMs, `${f.kind}: r1's last renewal`).toBeDefined();
          expect(round.timeToServeMs ?? Infinity, `${f.kind}: nobody served before r1 went on`).toBeGreaterThanOrEqual(round.event.healedAt! - round.event.startedAt);
        }
      }
      if (faulted.some((f) => f.neverTakenOver)) expect(result.ops.filter((op) => op.process === "r1" && op.outcome === "ok").length).toBeGreaterThan(0);
    }, 150_000 + 100_000 * rounds.length);
  }
});
