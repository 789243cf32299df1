// Scale: 1,000 to 10,000 groups in one stack (issue 24). Drives only the public
// library API (provider/automation/index.ts) and the built `user-groups` command,
// so it measures whatever layout the library gives a big stack (one Pulumi stack,
// or shards run in parallel) without knowing it:
//   cli    on a fresh file backend against the unthrottled emulator (in a worker
//          thread): provisionUserGroups of N new groups, previewUserGroups with
//          nothing changed (answered from the state, then again with the engine run
//          for every shard), detectDrift, destroyUserGroups; the same runs of the two
//          floors (N no-op dynamic resources, plain and of a UserGroup's shape, as
//          inline programs through the Automation API, as ours runs); seconds, and
//          the peak resident memory of the engine and dynamic-provider processes
//   fleet  UserGroupFleet: ensureMany of N new groups on a fresh stack, then
//          one ensure of a new group at a time (several, the median reported),
//          against the same in a fleet of 300; list of the whole fleet
//   crash  `user-groups up` of N groups in a process group of its own, SIGKILLed
//          once half of the groups exist on the server; recoverStack; then every
//          declared group on the server exactly once, in the state with the
//          server's token (recover's outputs, an unchanged preview, drift in sync),
//          nothing else on the server
// The report (tables, ratios, chart) is bench/scale-report.ts.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import {
  destroyUserGroups,
  detectDrift,
  type GroupSpec,
  previewUserGroups,
  provisionUserGroups,
  recoverStack,
  type RunOptions,
  UserGroupFleet,
} from "../provider/automation/index.js";
import { PREVIEW_ENGINE_ENV } from "../provider/automation/internal.js";
import { commandLine, descendantsOf, isRunning } from "../testkit/kill-tree.js";
import { KEY, type ServerThread, startServerThread } from "./fake-server.js";
import { declareFloor } from "./inline-floors.js";
import { timed, type TimedOperation } from "./timed-operation.js";
import type { FloorKind } from "./inline-floors.js";

/** The operations of the CLI-equivalent part; the floors have no drift of their own (a preview with refresh stands for it). */
export type ScaleOperation = "up" | "preview-unchanged" | "drift" | "destroy";
export const SCALE_OPERATIONS: readonly ScaleOperation[] = ["up", "preview-unchanged", "drift", "destroy"];
export type ScaleKind = "ours" | FloorKind;
export type { TimedOperation };
export { timed };
export const SCALE_KINDS: readonly ScaleKind[] = ["floor", "floor-shaped", "ours"];


export interface CliRun {
  readonly kind: ScaleKind;
  readonly n: number;
  readonly operations: Record<ScaleOperation, TimedOperation>;
  /** Ours only: the unchanged preview with the engine run for every shard (USER_GROUPS_PREVIEW_ENGINE=always). */
  readonly previewEngine?: TimedOperation;
}

export interface FleetScaleRun {
  readonly n: number;
  /** ensureMany of n new groups on a fresh stack. */
  readonly ensureManySeconds: number;
  /** Each ensure of one new group in the fleet of n (run one after the other). */
  readonly ensureSeconds: readonly number[];
  /** Each list of the whole fleet, and how many groups it returned. */
  readonly listSeconds: readonly number[];
  readonly listed: number;
  readonly ensureMany: Omit<TimedOperation, "seconds">;
}

export interface CrashScaleTrial {
  readonly n: number;
  /** False when the up finished before half of its groups existed. */
  readonly killed: boolean;
  /** Groups on the server when the kill was sent, and when recovery started. */
  readonly createdAtKill: number;
  readonly createdBeforeRecover: number;
  /** Seconds from the up's start to the kill. */
  readonly killAfterSeconds: number;
  /** Processes of the killed run, and how many outlived the process group's SIGKILL (in groups of their own). */
  readonly killedTree: number;
  readonly outlived: number;
  readonly recoverSeconds: number;
  readonly adopted: number;
  readonly pending: number;
  readonly removedLocks: number;
  readonly repairedFiles: number;
  /** Seconds of the checks after recovery (preview and drift of n). */
  readonly checkSeconds: number;
  /** Empty when every check held. */
  readonly problems: readonly string[];
}

export interface ScaleResults {
  readonly ns: readonly number[];
  readonly cli: readonly CliRun[];
  readonly fleet: readonly FleetScaleRun[];
  /** The fleet of FLEET_BASELINE, which the one-ensure ratio divides by (also in `fleet` when measured there). */
  readonly fleetBaseline: FleetScaleRun;
  readonly crash: readonly CrashScaleTrial[];
  /** Injected latency per create during the crash trials, ms. */
  readonly crashDelayMs: number;
  /** Whether the floors ran with Pulumi's checkpoint after every step (false: PULUMI_SKIP_CHECKPOINTS, see ScaleSettings). */
  readonly floorCheckpoints: boolean;
}

export interface ScaleSettings {
  readonly ns: readonly number[];
  readonly crashNs: readonly number[];
  /** Sequential single ensures per fleet size. */
  readonly ensureReps: number;
  /**
   * Run the floors with Pulumi's checkpoint after every step, as a stack of ours runs.
   * Off by default: one stack with checkpoints costs the square of N (61 s for an up of
   * 1,000 no-op resources, docs/performance.md), about two hours at 10,000 per floor and
   * operation. Without them the floor is the engine's own linear cost of N resources in
   * one run, with no state write per step: the least any layout could cost.
   */
  readonly floorCheckpoints: boolean;
  readonly workRoot: string;
  readonly repoRoot: string;
  readonly log: (line: string) => void;
}

/** The fleet size one new group's ensure is compared with (issue 24: within 1.5x of one in a fleet of 300). */
export const FLEET_BASELINE = 300;
const PASSPHRASE = "bench-scale-passphrase";
/** Injected latency per API request while the crash trials run: requests are in flight when the kill lands. */
const CRASH_DELAY_MS = 50;


const secondsSince = (startMs: number): number => (performance.now() - startMs) / 1000;

export function scaleGroups(prefix: string, n: number): GroupSpec[] {
  return Array.from({ length: n }, (_, i) => ({ name: `Scale ${prefix} ${i}`, userGroupId: `${prefix}-${i}`, mapping: { sales: "warehouse-eu" } }));
}

export async function admin(server: ServerThread, method: "GET" | "POST" | "DELETE", name: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${server.url}/__admin/${name}`, {
    method,
    ...(method === "POST" ? { body: JSON.stringify(body ?? {}), headers: { "content-type": "application/json" } } : {}),
  });
  if (!res.ok) throw new Error(`${method} /__admin/${name} answered ${res.status}`);
  return res.json();
}

export async function serverGroups(server: ServerThread): Promise<Array<{ user_group_id: string; token: string }>> {
  return ((await admin(server, "GET", "groups")) as { groups: Array<{ user_group_id: string; token: string }> }).groups;
}

/** A fresh directory with a file backend and a work directory, and the run options of a stack in it. */
export function freshStack(workRoot: string, label: string, server: ServerThread): { dir: string; options: RunOptions } {
  mkdirSync(workRoot, { recursive: true });
  const dir = mkdtempSync(path.join(workRoot, `${label}-`));
  mkdirSync(path.join(dir, "state"));
  mkdirSync(path.join(dir, "program"));
  return {
    dir,
    options: {
      stack: "scale",
      workDir: path.join(dir, "program"),
      backendUrl: `file://${path.join(dir, "state")}`,
      passphrase: PASSPHRASE,
      envVars: {
        USER_GROUPS_BASE_URL: server.url,
        USER_GROUPS_API_KEY: KEY,
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_HOME: path.join(workRoot, "pulumi-home"),
      },
    },
  };
}



/** How ours is run: the shard size, the engine's parallelism, more environment (the profile's knobs; the defaults otherwise). */
export interface OursTuning {
  readonly shardSize?: number;
  readonly parallel?: number;
  readonly envVars?: Record<string, string>;
  /** Leave out the unchanged preview with the engine run for every shard (the profile's runs). */
  readonly withoutEnginePreview?: boolean;
}

export async function oursAt(n: number, server: ServerThread, workRoot: string, tuning: OursTuning = {}): Promise<CliRun> {
  const fresh = freshStack(workRoot, `ours-${n}`, server);
  const { dir } = fresh;
  const options: RunOptions = {
    ...fresh.options,
    envVars: { ...fresh.options.envVars, ...tuning.envVars },
    ...(tuning.shardSize !== undefined ? { shardSize: tuning.shardSize } : {}),
    ...(tuning.parallel !== undefined ? { parallel: tuning.parallel } : {}),
  };
  const groups = scaleGroups("g", n);
  try {
    await admin(server, "POST", "reset");
    const up = await timed(
      () => provisionUserGroups({ ...options, groups }),
      (r) => (r.summary.create === n ? undefined : `up of ${n} created ${r.summary.create}`),
    );
    const previewUnchanged = await timed(
      () => previewUserGroups({ ...options, groups }),
      (r) => (!r.changed && r.summary.same === n ? undefined : `preview of an unchanged ${n} saw ${JSON.stringify(r.summary)}`),
    );
    // The same preview as before the state could answer it: what the engine costs.
    const previewEngine = tuning.withoutEnginePreview ? undefined : await timed(
      () => previewUserGroups({ ...options, envVars: { ...options.envVars, [PREVIEW_ENGINE_ENV]: "always" }, groups }),
      (r) => (!r.changed && r.summary.same === n ? undefined : `engine preview of an unchanged ${n} saw ${JSON.stringify(r.summary)}`),
    );
    const drift = await timed(
      () => detectDrift(options),
      (r) => (r.inSync && r.checked === n ? undefined : `drift checked ${r.checked} of ${n}, in sync: ${r.inSync}`),
    );
    const destroy = await timed(
      () => destroyUserGroups(options),
      (r) => (r.summary.delete === n ? undefined : `destroy of ${n} deleted ${r.summary.delete}`),
    );
    const left = (await serverGroups(server)).length;
    if (left !== 0) throw new Error(`${left} groups left on the server after destroy`);
    return { kind: "ours", n, operations: { up, "preview-unchanged": previewUnchanged, drift, destroy }, ...(previewEngine ? { previewEngine } : {}) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A floor's stack: an inline program through the Automation API, as ours runs, on its own file backend. */
export async function floorAt(kind: FloorKind, n: number, checkpoints: boolean, server: ServerThread, workRoot: string): Promise<CliRun> {
  const { dir, options } = freshStack(workRoot, `${kind}-${n}`, server);
  try {
    const stack: Stack = await LocalWorkspace.createOrSelectStack(
      { stackName: options.stack, projectName: "user-groups-floor", program: declareFloor(kind, scaleGroups("g", n)) },
      {
        workDir: options.workDir!,
        envVars: {
          ...options.envVars,
          PULUMI_BACKEND_URL: options.backendUrl!,
          PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
          ...(checkpoints ? {} : { PULUMI_SKIP_CHECKPOINTS: "true" }),
        },
      },
    );
    // The engine counts the stack's own resource too.
    const counted = (want: string, summary: Record<string, number> | undefined): string | undefined =>
      summary?.[want] === n + 1 ? undefined : `${kind}: expected ${n} ${want}, got ${JSON.stringify(summary)}`;
    const up = await timed(() => stack.up(), (r) => counted("create", r.summary.resourceChanges));
    const previewUnchanged = await timed(() => stack.preview(), (r) => counted("same", r.changeSummary));
    const drift = await timed(() => stack.preview({ refresh: true }), (r) => counted("same", r.changeSummary));
    const destroy = await timed(() => stack.destroy(), (r) => counted("delete", r.summary.resourceChanges));
    return { kind, n, operations: { up, "preview-unchanged": previewUnchanged, drift, destroy } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function fleetAt(n: number, reps: number, server: ServerThread, workRoot: string, log: (line: string) => void): Promise<FleetScaleRun> {
  const { dir, options } = freshStack(workRoot, `fleet-${n}`, server);
  await admin(server, "POST", "reset");
  const fleet = new UserGroupFleet(options);
  try {
    const many = await timed(
      () => fleet.ensureMany(scaleGroups("f", n)),
      (r) => (r.length === n && r.every((g) => g.change === "create") ? undefined : `ensureMany of ${n} new groups answered ${r.filter((g) => g.change !== "create").length} other than create`),
    );
    const ensureSeconds: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      const one = await timed(
        () => fleet.ensure({ name: `Scale one ${rep}`, userGroupId: `one-${rep}` }),
        (r) => (r.change === "create" ? undefined : `ensure of a new group answered ${r.change}`),
      );
      ensureSeconds.push(one.seconds);
    }
    const listSeconds: number[] = [];
    let listed = 0;
    for (let rep = 0; rep < 2; rep++) {
      const start = performance.now();
      listed = (await fleet.list()).length;
      listSeconds.push(secondsSince(start));
    }
    if (listed !== n + reps) throw new Error(`list of a fleet of ${n + reps} returned ${listed}`);
    const { seconds: ensureManySeconds, ...ensureMany } = many;
    log(
      `  fleet N=${n}: ensureMany ${ensureManySeconds.toFixed(1)} s; one ensure ${ensureSeconds.map((s) => s.toFixed(2)).join(", ")} s; list ${listSeconds.map((s) => s.toFixed(2)).join(", ")} s`,
    );
    return { n, ensureManySeconds, ensureSeconds, listSeconds, listed, ensureMany };
  } finally {
    await fleet.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function waitForCondition(condition: () => Promise<boolean>, exited: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let done = false;
  void exited.then(() => (done = true));
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      condition().then(
        (met) => {
          if (met) resolve(true);
          else if (done) resolve(false);
          else if (Date.now() > deadline) reject(new Error(`timed out after ${timeoutMs} ms`));
          else setTimeout(tick, 100);
        },
        reject,
      );
    };
    tick();
  });
}

/** `user-groups up --file` of `groups`, as CI runs it, in a process group of its own. */
function startCliUp(repoRoot: string, groupsFile: string, backendUrl: string, env: Record<string, string>): ChildProcess {
  const cli = path.join(repoRoot, "dist", "provider", "cli", "user-groups.js");
  return spawn(process.execPath, [cli, "up", "--file", groupsFile, "--yes", "--stack", "scale", "--backend-url", backendUrl], {
    cwd: path.dirname(groupsFile),
    env: { ...process.env, ...env, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE },
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
}

/** The first lines of an error (the engine's messages run long), at most 1,000 characters. */
function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n").slice(0, 6).join(" ").slice(0, 1000);
}

/**
 * One crash trial. A trial with problems keeps its directory (state, work directory,
 * groups file) in `keepRoot` for a look afterwards; a consistent one is removed.
 */
export async function crashAt(n: number, server: ServerThread, workRoot: string, repoRoot: string, keepRoot: string, log: (line: string) => void): Promise<CrashScaleTrial> {
  const { dir, options } = freshStack(workRoot, `crash-${n}`, server);
  const groups = scaleGroups("c", n);
  // The command's work directory is .user-groups next to the groups file; recovery uses the same.
  const groupsFile = path.join(dir, "program", "groups.json");
  writeFileSync(groupsFile, JSON.stringify({ groups }));
  const recoverOptions = { ...options, workDir: path.join(dir, "program", ".user-groups") };
  // What the trial has learned so far: a stage that fails keeps the figures of the ones before it.
  const trial: { -readonly [K in keyof CrashScaleTrial]: CrashScaleTrial[K] } = { ...emptyTrial(n), problems: [] };
  const problems: string[] = [];
  let stage = "the up";
  await admin(server, "POST", "reset");
  await admin(server, "POST", "faults", {
    rules: [
      { method: "GET", action: "delay", delayMs: CRASH_DELAY_MS },
      { method: "POST", action: "delay", delayMs: CRASH_DELAY_MS },
    ],
  });
  const count = async (): Promise<number> => (await serverGroups(server)).length;
  const started = performance.now();
  const up = startCliUp(repoRoot, groupsFile, options.backendUrl!, options.envVars!);
  let stderr = "";
  up.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise<void>((resolve) => up.on("exit", () => resolve()));
  try {
    const half = Math.ceil(n / 2);
    const reached = await waitForCondition(async () => (await count()) >= half, exited, 30 * 60_000);
    if (!reached) {
      await exited;
      problems.push(`the up ended before ${half} groups existed (exit ${up.exitCode}): ${stderr.slice(-500)}`);
      return { ...trial, problems };
    }
    const tree = descendantsOf(up.pid!);
    trial.createdAtKill = await count();
    trial.killAfterSeconds = secondsSince(started);
    process.kill(-up.pid!, "SIGKILL");
    await exited;
    trial.killed = true;
    trial.killedTree = tree.length + 1;
    trial.outlived = tree.filter((pid) => isRunning(pid) && !/(^|\/)pulumi /.test(commandLine(pid))).length;
    await admin(server, "DELETE", "faults");
    trial.createdBeforeRecover = await count();

    stage = "recoverStack";
    let start = performance.now();
    const report = await recoverStack({ ...recoverOptions, groups });
    trial.recoverSeconds = secondsSince(start);
    trial.adopted = report.adopted.length;
    trial.pending = report.pending.length;
    trial.removedLocks = report.removedLocks.length;
    trial.repairedFiles = report.repairedFiles.length;

    stage = "the checks";
    start = performance.now();
    const held = await serverGroups(server);
    const tokens = new Map(held.map((g) => [g.user_group_id, g.token]));
    if (tokens.size !== held.length) problems.push(`the server holds ${held.length - tokens.size} groups twice`);
    const declared = new Set(groups.map((g) => g.userGroupId));
    const missing = [...declared].filter((id) => !tokens.has(id));
    const orphaned = [...tokens.keys()].filter((id) => !declared.has(id));
    if (missing.length > 0) problems.push(`${missing.length} declared groups not on the server (e.g. ${missing.slice(0, 3).join(", ")})`);
    if (orphaned.length > 0) problems.push(`${orphaned.length} groups on the server that nobody declared (e.g. ${orphaned.slice(0, 3).join(", ")})`);
    const outputs = new Map(report.up.groups.map((g) => [g.userGroupId, g.token]));
    const wrongToken = [...declared].filter((id) => outputs.get(id) === undefined || outputs.get(id) !== tokens.get(id));
    if (wrongToken.length > 0) problems.push(`${wrongToken.length} groups whose recovered token is not the server's (e.g. ${wrongToken.slice(0, 3).join(", ")})`);
    // Every declared group in the state as declared (nothing to create, update or delete) ...
    const preview = await previewUserGroups({ ...recoverOptions, groups });
    if (preview.changed || preview.summary.same !== n) problems.push(`the preview after recovery is not unchanged: ${JSON.stringify(preview.summary)}`);
    // ... and the state's tokens and names are the server's.
    const drift = await detectDrift(recoverOptions);
    if (!drift.inSync || drift.checked !== n) problems.push(`drift after recovery: ${drift.drift.length} drifted of ${drift.checked} checked`);
    trial.checkSeconds = secondsSince(start);
    return { ...trial, problems };
  } catch (error) {
    problems.push(`${stage} failed: ${errorText(error)}`);
    return { ...trial, problems };
  } finally {
    if (up.exitCode === null && up.signalCode === null) process.kill(-up.pid!, "SIGKILL");
    await admin(server, "DELETE", "faults").catch(() => undefined);
    if (problems.length > 0) {
      mkdirSync(keepRoot, { recursive: true });
      const kept = path.join(keepRoot, path.basename(dir));
      renameSync(dir, kept);
      log(`  crash N=${n}: kept the trial's state and work directory in ${kept}`);
    } else {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

function emptyTrial(n: number): CrashScaleTrial {
  return {
    n,
    killed: false,
    createdAtKill: 0,
    createdBeforeRecover: 0,
    killAfterSeconds: NaN,
    killedTree: 0,
    outlived: 0,
    recoverSeconds: NaN,
    adopted: 0,
    pending: 0,
    removedLocks: 0,
    repairedFiles: 0,
    checkSeconds: NaN,
    problems: [],
  };
}

const mib = (bytes: number | undefined): string => (bytes === undefined ? "–" : `${(bytes / 1024 ** 2).toFixed(0)} MiB`);

export async function measureScale(settings: ScaleSettings): Promise<ScaleResults> {
  const { log } = settings;
  const server = await startServerThread("fake");
  mkdirSync(settings.workRoot, { recursive: true });
  const root = mkdtempSync(path.join(settings.workRoot, "scale-"));
  try {
    const cli: CliRun[] = [];
    for (const [index, n] of settings.ns.entries()) {
      // Reversed on every other N: a load change on the machine hits every kind alike.
      for (const kind of index % 2 === 0 ? SCALE_KINDS : [...SCALE_KINDS].reverse()) {
        const run = kind === "ours" ? await oursAt(n, server, root) : await floorAt(kind, n, settings.floorCheckpoints, server, root);
        cli.push(run);
        log(
          `  ${kind.padEnd(12)} N=${String(n).padStart(5)} ` +
            SCALE_OPERATIONS.map((op) => `${op} ${run.operations[op].seconds.toFixed(1)} s`).join(", ") +
            `; up peak: engine ${mib(run.operations.up.enginePeakBytes)} (${run.operations.up.engineProcesses} processes), provider ${mib(run.operations.up.providerPeakBytes)} (${run.operations.up.providerProcesses})`,
        );
      }
    }
    const fleet: FleetScaleRun[] = [];
    const fleetNs = [...new Set([FLEET_BASELINE, ...settings.ns])].sort((a, b) => a - b);
    for (const n of fleetNs) fleet.push(await fleetAt(n, settings.ensureReps, server, root, log));
    const fleetBaseline = fleet.find((f) => f.n === FLEET_BASELINE)!;
    const crash: CrashScaleTrial[] = [];
    for (const n of settings.crashNs) {
      const trial = await crashAt(n, server, root, settings.repoRoot, path.join(settings.workRoot, "failed-trials"), log);
      crash.push(trial);
      log(
        `  crash N=${n}: ${trial.killed ? `killed at ${trial.createdAtKill} created (${trial.killAfterSeconds.toFixed(1)} s in), ${trial.createdBeforeRecover} when recovery started; ${trial.outlived} processes outlived the kill; recover ${Number.isFinite(trial.recoverSeconds) ? `${trial.recoverSeconds.toFixed(1)} s, ${trial.adopted} adopted` : "did not finish"}` : "not killed"}; ` +
          `${trial.problems.length === 0 ? "consistent" : `PROBLEMS: ${trial.problems.join("; ")}`}`,
      );
    }
    return { ns: settings.ns, cli, fleet: fleet.filter((f) => settings.ns.includes(f.n)), fleetBaseline, crash, crashDelayMs: CRASH_DELAY_MS, floorCheckpoints: settings.floorCheckpoints };
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}
