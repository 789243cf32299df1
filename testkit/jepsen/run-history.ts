// One fault history (issue 32 item 6), as Jepsen runs one: several replicas (testkit/jepsen/replica.ts, each its own
// OS process group) call ensure, remove and list on a small set of ids, so that calls collide; one fault is injected
// while replica r1 holds the stack (in an engine run: a create the fake server delays is under way), then healed; the
// load goes on, every failed call is retried once all is healed, the replicas drain and exit, and the checker
// (checker.ts) replays the history against the service, every shard's state and the shard directory.
//
// Faults (fault-kinds.ts): SIGKILL or SIGSTOP/SIGCONT of r1's processes; a partition between r1 and its backend
// through Toxiproxy (r1's backend URL is its proxy's); a backend restart; on a file backend, r1's engine frozen at its
// checkpoint write ("slow disk"), or r1's Node process stalled while its engine goes on.
import { watch, type FSWatcher, mkdirSync } from "node:fs";
import path from "node:path";
import type { FakeServer } from "../../fake-server/index.js";
import type { PostgresServer } from "../postgres.js";
import { descendantsOf, commandLine, isRunning } from "../kill-tree.js";
import { checkHistory, type FinalState, problemsOf, timeToServe, type Verdict } from "./checker.js";
import type { Backend, FaultKind } from "./fault-kinds.js";
import { describeOp, type FaultEvent, HistoryRecorder, type Op, type OpKind } from "./history.js";
import { checkLinearizable, porcupineCheckPath } from "./linearizability.js";
import { type HeldLease, heldLeases, lastRenewalOf } from "./leases.js";
import { Replica } from "./replica.js";
import { readDirectory, readShardStates } from "./final-state.js";
import type { PartitionMode, Toxiproxy } from "./toxiproxy.js";

export interface HistoryOptions {
  readonly label: string;
  readonly backend: Backend;
  readonly fault: FaultKind;
  readonly server: FakeServer;
  /** The backend every replica names (PostgreSQL's URL, or file://<dir>). */
  readonly backendUrl: string;
  /** PostgreSQL (pg-restart, and the upstream of partitions). */
  readonly postgres?: PostgresServer;
  /** An object store's address (`127.0.0.1:<port>`, as its backend URL names it): the upstream of partitions and of a store restart. */
  readonly storeAddress?: string;
  /** A store whose endpoint the environment names, not its URL (GCS: STORAGE_EMULATOR_HOST): a replica's variables for an address (a proxy's). */
  readonly endpointEnv?: (address: string) => Record<string, string>;
  readonly toxiproxy?: Toxiproxy;
  /** Each replica's work directory goes below this (inside the package: the provider resolves from there). */
  readonly workRoot: string;
  /** testkit/jepsen/replica-worker.cjs (not compiled into build/). */
  readonly worker: string;
  /** The replicas' and the checker's engine environment: PATH with pulumi, PULUMI_HOME, passphrase, USER_GROUPS_*. */
  readonly env: Record<string, string>;
  readonly replicas?: number;
  /** The colliding ids (default 4). */
  readonly ids?: readonly string[];
  readonly shardSize?: number;
  readonly lockTimeoutMs?: number;
  /** Load before the fault, fault held, load after the heal (ms). */
  readonly warmupMs?: number;
  readonly faultMs?: number;
  readonly afterMs?: number;
  /**
   * Heal the fault as soon as another replica has been served by an engine run
   * (timeToServe: a create or a delete of another replica's, completed after the
   * fault's start), `faultMs` at the latest: a history that must show the others
   * serving while r1 is still paused or cut off waits for that event, not for a
   * fixed 45 s. Default false (the fault is held `faultMs`).
   */
  readonly healOnceServed?: boolean;
  /** PostgreSQL down this long in a restart (ms). */
  readonly restartDownMs?: number;
  /** How long the create r1 is in when the fault lands takes on the service (ms). */
  readonly holdDelayMs?: number;
  /** The first fault's FaultRound.killAfterAnswer. */
  readonly killAfterAnswer?: boolean;
  /**
   * More faults after the first (`fault`, `faultMs`, `healOnceServed`, `holdDelayMs`), each in its own round: r1
   * gets into a run, the fault lands and heals, `afterMs` of load; the drain, the retries and the checks come once,
   * after the last round. A short form of several histories in one (the replicas start once, the end is checked
   * once): npm test's. Neither `none` nor `race` can be a round of several; a kill can only be the last.
   */
  readonly thenFaults?: readonly FaultRound[];
  /** A fourth replica asking for a fresh group at each fault (default true): one run more each round; reported only. */
  readonly probe?: boolean;
  /** A replica's pause after a failed call (ms, default 0): a cut-off replica's fail in ms, each an indeterminate call for porcupine. */
  readonly pauseAfterFailMs?: number;
  /** Share of removes among the random calls (default 0.25; "race" uses 0.45). */
  readonly removeShare?: number;
  /**
   * Who removes an id: "any" replica (removes race ensures and removes of other
   * replicas: issue 32 item 3), or only its "owner" (the replica of its index;
   * ensures and lists still come from every replica). Default: "any".
   */
  readonly removeFrom?: "any" | "owner";
  /**
   * Another replica's host name (Linux: its own UTS namespace, `unshare`): the
   * replicas named here run "on another host", so that no pid of theirs can be
   * checked from the others (issue 32: "B, as another host"). Default: none.
   */
  readonly otherHost?: readonly string[];
  /** Time allowed, after the load, for every call to be answered (ms; default 150 s). */
  readonly drainMs?: number;
  readonly seed?: number;
  readonly log?: (line: string) => void;
}

export interface HistoryResult {
  readonly label: string;
  readonly backend: Backend;
  readonly fault: FaultKind;
  readonly ops: readonly Op[];
  readonly faults: readonly FaultEvent[];
  readonly verdict: Verdict;
  /** Every problem: our checker's (checker.ts), then porcupine's (linearizability.ts), one entry each. */
  readonly problems: readonly string[];
  /** porcupine's report: a line per group id (linearizable, or why not). */
  readonly linearizability: string;
  /** Fault start to another replica's first engine-backed ok call (ms); undefined when none came. */
  readonly timeToServeMs: number | undefined;
  /**
   * Fault start to the probe's ok, ms: a fresh create asked for right at the
   * fault's start of a replica that carries no other load ("probe", idle until
   * then, so that the probe does not queue behind a batch of its own replica).
   */
  readonly probeServedMs: number | undefined;
  /**
   * r1's last lease renewal before the fault, ms before the fault's start (read
   * from the lease: PostgreSQL's table, a file backend's lease file); undefined
   * when r1 held no lease then. Issue 32's bound counts from that renewal.
   */
  readonly lastRenewalBeforeMs: number | undefined;
  /** Each round's fault, in order (the fields above are the first's); empty for "none" and "race". */
  readonly rounds: readonly RoundResult[];
  readonly durationMs: number;
  readonly final: { readonly serviceGroups: number; readonly stateGroups: number; readonly shards: number };
}

/** mulberry32: a small seeded generator, so that a history can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(20);
  }
  return false;
}

/** The `pulumi` CLI processes under a replica (its engine runs). */
function enginesOf(replica: Replica): number[] {
  return descendantsOf(replica.pid).filter((pid) => isRunning(pid) && /(^|\/)pulumi (up|destroy|refresh)\b/.test(commandLine(pid)));
}

/** One fault of a history's rounds, and how long it holds. */
export interface FaultRound {
  readonly kind: FaultKind;
  /** How long the fault holds (ms; at most this long with `healOnceServed`). */
  readonly faultMs: number;
  /** Heal as soon as another replica has been served (HistoryOptions.healOnceServed). */
  readonly healOnceServed?: boolean;
  /** How long the create r1 is in when this fault lands takes on the service (ms). */
  readonly holdDelayMs?: number;
  /** A kill lands the moment r1's ensure (the one it is in) has been answered, not while it waits (issue #44: the record-first answer). */
  readonly killAfterAnswer?: boolean;
}

/** What one round's fault showed (the history's first round's are HistoryResult's own fields too). */
export interface RoundResult {
  readonly fault: FaultKind;
  readonly event: FaultEvent;
  readonly timeToServeMs: number | undefined;
  readonly probeServedMs: number | undefined;
  readonly lastRenewalBeforeMs: number | undefined;
}

/** The partition a fault kind makes through Toxiproxy, if it is one. */
function partitionOf(kind: FaultKind): PartitionMode | undefined {
  return kind === "partition-reset" ? "reset" : kind === "partition-refuse" ? "refuse" : kind === "partition-blackhole" ? "blackhole" : undefined;
}

export async function runHistory(options: HistoryOptions): Promise<HistoryResult> {
  // The second checker, built before the history starts (cached after the first build): scripts/ensure-linearizability.
  porcupineCheckPath();
  const started = Date.now();
  const log = options.log ?? (() => {});
  const rand = random(options.seed ?? 1);
  const recorder = new HistoryRecorder();
  /** The recorder's time 0, in ms since the epoch. */
  const origin = Date.now() - recorder.now();
  const stack = `jepsen-${options.label}`;
  const ids = options.ids ?? ["g0", "g1", "g2", "g3"].map((id) => `${options.label}-${id}`);
  const warmupMs = options.warmupMs ?? 6_000;
  const afterMs = options.afterMs ?? 8_000;
  // The faults, one after another (each followed by afterMs of load): the first is `fault`, then `thenFaults`.
  const rounds: FaultRound[] = [
    {
      kind: options.fault,
      faultMs: options.faultMs ?? 15_000,
      ...(options.healOnceServed ? { healOnceServed: true } : {}),
      ...(options.holdDelayMs !== undefined ? { holdDelayMs: options.holdDelayMs } : {}),
      ...(options.killAfterAnswer ? { killAfterAnswer: true } : {}),
    },
    ...(options.thenFaults ?? []),
  ];
  const noFault = (kind: FaultKind) => kind === "none" || kind === "race";
  if (rounds.length > 1 && rounds.some((r) => noFault(r.kind))) throw new Error("a history of several faults has no \"none\" or \"race\" round");
  if (rounds.slice(0, -1).some((r) => r.kind === "kill")) throw new Error("a kill can only be a history's last fault (r1 is dead after it)");
  // Round 0 keeps the single-fault names (label-hold, label-probe); later rounds number theirs.
  const holdIds = rounds.map((_, i) => `${options.label}-hold${i === 0 ? "" : i}`);
  const probeIds = rounds.map((_, i) => `${options.label}-probe${i === 0 ? "" : i}`);
  const allIds = new Set([...ids, ...holdIds, ...probeIds]);
  const names = Array.from({ length: options.replicas ?? 3 }, (_, i) => `r${i + 1}`);
  const removeShare = options.removeShare ?? (options.fault === "race" ? 0.45 : 0.25);
  const removeFrom = options.removeFrom ?? "any";
  const partitioned = rounds.some((r) => partitionOf(r.kind) !== undefined);
  const { server } = options;

  // r1's backend: through its own proxy for a partition; the others' through one of theirs for an object store's restart.
  const proxyName = `${options.label}-r1`;
  const othersProxy = `${options.label}-others`;
  const storeRestarts = rounds.some((r) => r.kind === "store-restart");
  const upstream = options.postgres ? `127.0.0.1:${options.postgres.port}` : options.storeAddress;
  let [r1Backend, othersBackend, r1Env, othersEnv] = [options.backendUrl, options.backendUrl, options.env, options.env];
  /** The backend URL and environment of replicas that reach the store through this proxy. */
  const through = async (proxy: string): Promise<[string, Record<string, string>]> => {
    const address = `127.0.0.1:${await options.toxiproxy!.proxy(proxy, upstream!)}`;
    return [options.backendUrl.replace(upstream!, address), { ...options.env, ...options.endpointEnv?.(address) }];
  };
  if (partitioned || storeRestarts) {
    if (!options.toxiproxy || upstream === undefined) throw new Error(`${rounds.map((r) => r.kind).join(", ")} needs a store's address (PostgreSQL's, an object store's) and Toxiproxy`);
    [r1Backend, r1Env] = await through(proxyName);
  }
  if (storeRestarts) [othersBackend, othersEnv] = await through(othersProxy);
  mkdirSync(options.workRoot, { recursive: true });
  const replicas = names.map(
    (name) =>
      new Replica(name, recorder, options.worker, {
        stack,
        backendUrl: name === "r1" ? r1Backend : othersBackend,
        workDir: path.join(options.workRoot, `${options.label}-${name}`),
        ...(options.shardSize !== undefined ? { shardSize: options.shardSize } : {}),
        lockTimeoutMs: options.lockTimeoutMs ?? 90_000,
      }, name === "r1" ? r1Env : othersEnv, options.otherHost?.includes(name) ? `${name}-elsewhere` : undefined),
  );
  const [r1] = replicas as [Replica, ...Replica[]];
  // The probe's replica: no load of its own, so that its one call a round (a fresh sign-up at the fault's start) waits for the stack, not behind a batch of its replica.
  const hasProbe = !noFault(options.fault) && options.probe !== false;
  const prober = hasProbe
    ? new Replica("probe", recorder, options.worker, { stack, backendUrl: othersBackend, workDir: path.join(options.workRoot, `${options.label}-probe`), ...(options.shardSize !== undefined ? { shardSize: options.shardSize } : {}), lockTimeoutMs: options.lockTimeoutMs ?? 90_000 }, othersEnv)
    : undefined;
  const everyone = prober ? [...replicas, prober] : replicas;

  // The service's tokens, sampled.
  const sampler = setInterval(() => recorder.observe(server.groups(), allIds), 100);
  let watcher: FSWatcher | undefined;
  let fault: FaultEvent | undefined;
  /** Each round's fault event and r1's last renewal before it (history time), in round order. */
  const injected: Array<{ round: FaultRound; event: FaultEvent; lastRenewalAt: number | undefined }> = [];
  let loading = true;
  /** While r1 gets into its run before the fault: the others start no new call. */
  let settingUp = false;
  const calls: Promise<Op>[] = [];
  const track = (p: Promise<Op>) => {
    calls.push(p);
    return p;
  };
  const cleanups: Array<() => Promise<void> | void> = [];
  const crashed = new Set<string>();
  try {
    await Promise.all(everyone.map((r) => r.whenReady()));
    log(`history ${options.label}: ${names.length} replicas ready (${((Date.now() - started) / 1000).toFixed(1)} s)`);

    // The load: each replica one call at a time, ids drawn from the small set.
    const loop = async (replica: Replica) => {
      while (loading && replica.alive) {
        if (settingUp) {
          await sleep(50);
          continue;
        }
        const pick = rand();
        const f: OpKind = pick < removeShare ? "remove" : pick < removeShare + 0.12 ? "list" : "ensure";
        const at = Math.floor(rand() * ids.length);
        const owner = names[at % names.length];
        const id = f === "list" ? undefined : ids[at]!;
        // A remove of an id this replica does not own becomes an ensure of it, when only owners remove.
        const kind: OpKind = f === "remove" && removeFrom === "owner" && replica.name !== owner ? "ensure" : f;
        const op = await track(replica.call(kind, id, fault && fault.healedAt === undefined ? { duringFault: fault.kind } : {}));
        await sleep(100 + Math.floor(rand() * 400) + (op.outcome === "fail" ? (options.pauseAfterFailMs ?? 0) : 0));
      }
    };
    const loops = replicas.map((r) => loop(r));
    await sleep(warmupMs);

    for (const [index, round] of rounds.entries()) {
      const holdId = holdIds[index]!;
      // r1 in a run when the fault lands: a create of its own that the service answers slowly.
      let holdCall: Promise<unknown> | undefined;
      if (!noFault(round.kind)) {
        // No new calls meanwhile, so that r1 gets the stack once the calls under way are answered (not after every replica's next run).
        settingUp = true;
        server.addFaults([{ method: "GET", user_group_id: holdId, action: "delay", delayMs: round.holdDelayMs ?? 4_000, times: 1 }]);
        holdCall = track(r1.call("ensure", holdId));
        // The delay rule fires when the create arrives (its `remaining` drops to 0): r1's engine is waiting on it then.
        // (As long as a call may wait for the stack: under load the calls already under way take a run each first.)
        const inRun = await waitUntil(() => (server.faults() as Array<{ user_group_id?: string; remaining?: number }>).some((rule) => rule.user_group_id === holdId && rule.remaining === 0), options.lockTimeoutMs ?? 90_000);
        if (!inRun) log(`history ${options.label}: r1 never got into its run (the fault lands anyway)`);
      }

      settingUp = false;
      // The leases held as the fault lands: r1's (it is in a run), for the time from its last renewal.
      const renewalMatters = ["kill", "pause", "stall-node", "partition-reset", "partition-refuse", "partition-blackhole"].includes(round.kind);
      const leasesBefore = renewalMatters ? await heldLeases(options.backendUrl, stack).catch(() => undefined) : undefined;

      // The fault.
      fault = undefined;
      let heal: () => Promise<void> = async () => {};
      switch (round.kind) {
        case "none":
        case "race":
          break;
        case "kill": {
          if (round.killAfterAnswer) await holdCall;
          fault = recorder.faultStarted("kill", "r1", `SIGKILL of r1's process group and every process under it${round.killAfterAnswer ? ", right after its ensure was answered" : ""}`);
          crashed.add("r1");
          r1.kill();
          break;
        }
        case "pause": {
          const pids = r1.pause("group");
          fault = recorder.faultStarted("pause", "r1", `SIGSTOP of ${pids.length} processes`);
          heal = async () => r1.resume();
          break;
        }
        case "stall-node": {
          r1.pause("node");
          fault = recorder.faultStarted("stall-node", "r1", "SIGSTOP of r1's Node process only");
          heal = async () => r1.resume();
          break;
        }
        case "partition-reset":
        case "partition-refuse":
        case "partition-blackhole": {
          const mode = partitionOf(round.kind)!;
          await options.toxiproxy!.partition(proxyName, mode);
          fault = recorder.faultStarted(round.kind, "r1", `Toxiproxy ${mode}`);
          heal = () => options.toxiproxy!.heal(proxyName);
          break;
        }
        case "store-restart": {
          const downMs = options.restartDownMs ?? 2_000;
          fault = recorder.faultStarted("store-restart", undefined, `every replica's connections to the store reset and refused for ${downMs} ms`);
          for (const name of [proxyName, othersProxy]) {
            await options.toxiproxy!.partition(name, "reset");
            await options.toxiproxy!.partition(name, "refuse");
          }
          await sleep(downMs);
          for (const name of [proxyName, othersProxy]) await options.toxiproxy!.heal(name);
          recorder.faultHealed(fault);
          break;
        }
        case "pg-restart": {
          fault = recorder.faultStarted("pg-restart", undefined, `down ${options.restartDownMs ?? 2_000} ms`);
          await options.postgres!.restart({ downMs: options.restartDownMs ?? 2_000 });
          recorder.faultHealed(fault);
          break;
        }
        case "slow-disk": {
          // r1's engine frozen as soon as it writes the stack's checkpoint: a write that takes faultMs.
          const stacksDir = path.join(new URL(options.backendUrl).pathname, ".pulumi", "stacks");
          mkdirSync(stacksDir, { recursive: true });
          let frozen: number[] = [];
          const writeSeen = new Promise<void>((resolve) => {
            watcher = watch(stacksDir, { recursive: true }, (_event, file) => {
              if (frozen.length > 0 || !String(file ?? "").includes(stack)) return;
              frozen = r1.pause("engine");
              if (frozen.length > 0) resolve();
            });
          });
          const seen = await Promise.race([writeSeen.then(() => true), sleep(30_000).then(() => false)]);
          watcher?.close();
          fault = recorder.faultStarted("slow-disk", "r1", seen ? `r1's engine (${frozen.length} process) frozen at a checkpoint write` : "no checkpoint write seen in 30 s: nothing frozen");
          heal = async () => r1.resume();
          break;
        }
      }
      // Another replica asks for a fresh group right away: the time until it is served.
      if (prober && fault) void track(prober.call("ensure", probeIds[index]!, { duringFault: fault.kind }));
      // r1's last renewal before the fault (it renews no more: paused, stalled, cut off, dead).
      let lastRenewalAt: number | undefined;
      if (leasesBefore !== undefined) {
        const renewed = lastRenewalOf(leasesBefore, await heldLeases(options.backendUrl, stack).catch(() => new Map<string, HeldLease>()));
        if (renewed !== undefined) lastRenewalAt = renewed - origin;
      }
      if (fault) injected.push({ round, event: fault, lastRenewalAt });
      if (fault && fault.healedAt === undefined) {
        const held = fault;
        if (round.healOnceServed) await waitUntil(() => timeToServe(recorder.ops, held) !== undefined, round.faultMs);
        else await sleep(round.faultMs);
        await heal();
        recorder.faultHealed(fault);
        const servedFirst = round.healOnceServed && timeToServe(recorder.ops, held) !== undefined ? " (another replica served: healed on that)" : "";
        log(`history ${options.label}: ${fault.kind} healed after ${((fault.healedAt! - fault.startedAt) / 1000).toFixed(1)} s${servedFirst}`);
      }
      // Load after the heal (before the next round's fault, or the drain).
      await sleep(afterMs);
    }
    loading = false;
    await Promise.race([Promise.all(loops), sleep(options.drainMs ?? 150_000)]);
    // Every call answered, or cut as info.
    const drained = await Promise.race([Promise.all(calls).then(() => true), sleep(options.drainMs ?? 150_000).then(() => false)]);
    if (!drained) for (const r of everyone) r.cut();

    // Retries of every failed call (and of a killed replica's unanswered ones), from a replica that is up (r1 when it lives: it was healed).
    const failed = recorder.ops.filter((op) => op.outcome === "fail" || (op.outcome === "info" && crashed.has(op.process)));
    const up = replicas.filter((r) => r.alive);
    if (failed.length > 0) log(`history ${options.label}: retrying ${failed.length} failed calls`);
    const retries = failed.map((op, i) => {
      const replica = up.find((r) => r.name === op.process) ?? up[i % up.length]!;
      return replica.call(op.f, op.id, { retryOf: op.index });
    });
    const retried = await Promise.race([Promise.all(retries).then(() => true), sleep(options.drainMs ?? 150_000).then(() => false)]);
    if (!retried) for (const r of everyone) r.cut();
  } finally {
    loading = false;
    watcher?.close();
    clearInterval(sampler);
    recorder.observe(server.groups(), allIds);
    for (const r of everyone) r.resume();
    await Promise.all(everyone.map((r) => r.close(30_000).catch(() => r.kill())));
    for (const r of everyone) r.kill(); // anything left under them
    server.clearFaults();
    for (const cleanup of cleanups) await cleanup();
  }

  // The end, and the verdict.
  const checkerEnv = { ...options.env };
  const directory = await readDirectory(stack, options.backendUrl);
  // Every shard the directory names, and as many as the ids could need besides.
  const maxShard = Math.max(0, ...directory.values()) + Math.ceil(allIds.size / (options.shardSize ?? 250)) + 1;
  const shards = await readShardStates({ stack, backendUrl: options.backendUrl, workDir: path.join(options.workRoot, `${options.label}-checker`), envVars: checkerEnv }, maxShard);
  const final: FinalState = { service: server.groups().filter((g) => allIds.has(g.user_group_id)), shards, directory };
  const verdict = checkHistory(recorder.ops, final, { observations: recorder.observations, ids: allIds, crashed });
  // Every history is checked twice: by ours against the end, and by porcupine for linearizability per id (the final read: every shard's state).
  const linear = checkLinearizable(recorder.ops, { ids: allIds, finalRead: shards.flatMap((s) => s.groups) });
  const problems = [...problemsOf(verdict), ...linear.problems];
  const roundResults: RoundResult[] = injected.map(({ round, event, lastRenewalAt }) => {
    const probeOp = recorder.ops.find((op) => op.id === probeIds[rounds.indexOf(round)] && op.retryOf === undefined);
    return {
      fault: round.kind,
      event,
      timeToServeMs: timeToServe(recorder.ops, event),
      probeServedMs: probeOp?.outcome === "ok" ? probeOp.completedAt! - event.startedAt : undefined,
      lastRenewalBeforeMs: lastRenewalAt !== undefined ? event.startedAt - lastRenewalAt : undefined,
    };
  });
  const first = roundResults[0];
  const result: HistoryResult = {
    label: options.label,
    backend: options.backend,
    fault: options.fault,
    ops: recorder.ops,
    faults: recorder.faults,
    verdict,
    problems,
    linearizability: linear.report,
    timeToServeMs: first?.timeToServeMs,
    probeServedMs: first?.probeServedMs,
    lastRenewalBeforeMs: first?.lastRenewalBeforeMs,
    rounds: roundResults,
    durationMs: Date.now() - started,
    final: { serviceGroups: final.service.length, stateGroups: shards.reduce((n, s) => n + s.groups.length, 0), shards: shards.length },
  };
  log(describeHistory(result));
  if (problems.length > 0 || process.env["JEPSEN_VERBOSE"] === "1") log(recorder.ops.map(describeOp).join("\n"));
  return result;
}

/** A time from the fault's start counted from r1's last renewal before it (from the fault's start when that is unknown); of the first round, or of the round given. */
export function fromRenewal(r: Pick<HistoryResult, "lastRenewalBeforeMs">, fromFaultMs: number | undefined): number | undefined {
  return fromFaultMs === undefined ? undefined : fromFaultMs + (r.lastRenewalBeforeMs ?? 0);
}

export function describeHistory(r: HistoryResult): string {
  const c = r.verdict.counts;
  const s = (ms: number | undefined) => (ms === undefined ? "never" : `${(ms / 1000).toFixed(1)} s`);
  const served = (x: RoundResult) =>
    `served again ${s(x.timeToServeMs)} after the fault (probe ${s(x.probeServedMs)})` +
    (x.lastRenewalBeforeMs !== undefined ? `, r1 last renewed ${s(x.lastRenewalBeforeMs)} before it (probe ${s(fromRenewal(x, x.probeServedMs))} after that renewal)` : "");
  const rounds = r.rounds.length > 1 ? r.rounds.map((x) => `${x.fault} (held ${s(x.event.healedAt === undefined ? undefined : x.event.healedAt - x.event.startedAt)}): ${served(x)}`).join("; ") : r.rounds[0] ? served(r.rounds[0]) : "no fault";
  return (
    `history ${r.label} (${r.backend}, ${r.rounds.length > 1 ? r.rounds.map((x) => x.fault).join(" + ") : r.fault}): ${r.ops.length} calls (${c.ok} ok, ${c.fail} failed, ${c.info} unanswered, ${c.retried} retried) in ${(r.durationMs / 1000).toFixed(0)} s; ` +
    `${rounds}; ` +
    `end: ${r.final.serviceGroups} groups on the service, ${r.final.stateGroups} in ${r.final.shards} shard states; ` +
    `${r.problems.length === 0 ? "VALID (and linearizable per id: porcupine)" : `INVALID: ${r.problems.join("; ")}`}`
  );
}

