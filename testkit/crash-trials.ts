// Crash consistency: kill -9 a `pulumi up` (the CLI the Automation API spawned,
// and its plugins) while it creates or rotates many groups, recover with
// `recoverStack`, and check that the stack converged: exactly one server group
// per declared group, no orphan, no lost token, no pending operation, nothing
// left running, and a preview and a refresh with no changes. A create from an
// empty stack runs without a checkpoint per step (its intents in the run record:
// provider/automation/engine/intents.ts), as does a destroy: a `pulumi destroy`
// killed mid-way is followed by a plain `up` of the same groups (its takeover
// reads the deleted ones back), checked the same way, then a destroy that must
// leave the service empty.
// Shared by test/reliability/crash.test.ts (a few trials) and bench/crash.ts
// (`npm run bench:crash`, twenty).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type FakeServer, startFakeServer } from "../fake-server/index.js";
import { destroyUserGroups, previewUserGroups, provisionUserGroups, type RecoveryReport, recoverStack, refreshUserGroups, type RunOptions, type TakeoverReport } from "../provider/automation/index.js";
import { nameOfUrn } from "../provider/automation/internal.js";
import { findPulumiUps, isRunning, killTree } from "./kill-tree.js";

export type TrialKind = "create" | "rotate" | "destroy";

export interface CrashTrialSpec {
  readonly kind: TrialKind;
  readonly groups: number;
  /** Kill once this many groups exist (create), have a new token (rotate) or are deleted (destroy). */
  readonly killAt: number;
  /** RunOptions.shardSize: below `groups`, the up runs several shards at once and the kill lands in each. */
  readonly shardSize?: number;
}

export interface CrashTrialResult extends CrashTrialSpec {
  /** False when the run finished before the kill point was seen. */
  readonly killed: boolean;
  /** Groups created / rotated on the server when the kill was sent, and once the killed run's last requests landed. */
  readonly doneAtKill: number;
  readonly doneAfterKill: number;
  /** Groups the state recorded, and its pending operations, as the killed run left it. */
  readonly recordedAtKill: number;
  /** Intents of a checkpoint-free run in its run record as the killed run left it: groups to create, groups to delete. */
  readonly intentsAtKill: number;
  readonly removingAtKill: number;
  readonly pendingCreates: number;
  readonly pendingOther: number;
  /** Pending creates whose group existed on the server: adoption was needed for them. */
  readonly adoptedExisting: number;
  /** Server groups neither recorded nor pending (none expected: the recovery could not tell them from someone else's). */
  readonly unaccounted: number;
  readonly removedLocks: number;
  /** Torn sidecars / temporaries of a checkpoint write the kill interrupted, removed by the recovery. */
  readonly repairedFiles: readonly string[];
  /** Killed processes still running 1 s later. */
  readonly survivors: number;
  /** Empty when the stack converged. */
  readonly problems: readonly string[];
  readonly seconds: number;
}

export interface CrashBenchOptions {
  readonly trials: number;
  readonly groups: number;
  /** A directory inside this package (the dynamic provider resolves the package from there). */
  readonly workRoot: string;
  /** Injected latency per GET and POST, so that requests are in flight when the kill lands. */
  readonly delayMs?: number;
  /** RunOptions.shardSize of every trial. */
  readonly shardSize?: number;
  /** The trials' kinds, taking turns (default create, rotate). */
  readonly kinds?: readonly TrialKind[];
  readonly onTrial?: (result: CrashTrialResult, index: number) => void;
}

const KEY = "bench-crash-key-0001";
const PROJECT = "user-groups";

/** Kill points spread over 1..groups-1, the kinds (by default create and rotate) taking turns. */
export function trialPlan(trials: number, groups: number, kinds: readonly TrialKind[] = ["create", "rotate"]): CrashTrialSpec[] {
  return Array.from({ length: trials }, (_, i) => ({
    kind: kinds[i % kinds.length]!,
    groups,
    killAt: 1 + Math.floor(((i + 0.5) * (groups - 1)) / trials),
  }));
}

function declaredGroups(count: number, trigger: string) {
  return Array.from({ length: count }, (_, i) => ({
    name: `Crash ${i}`,
    userGroupId: `crash-${i}`,
    mapping: { sales: `dw-${i}` },
    properties: { n: i },
    rotationTrigger: trigger,
  }));
}

interface StoredState {
  readonly recorded: string[];
  readonly pending: Array<{ type: string; name: string }>;
}

/** The state of the stack and its shards as the file backend holds it (URNs and operation types are plain text; nothing to decrypt). */
function readState(backendDir: string, stack: string): StoredState {
  const dir = path.join(backendDir, ".pulumi", "stacks", PROJECT);
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f === `${stack}.json` || (f.startsWith(`${stack}.shard-`) && /^\.shard-\d+\.json$/.test(f.slice(stack.length)))) : [];
  const states = files.map((f) => readStackFile(path.join(dir, f)));
  return { recorded: states.flatMap((s) => s.recorded), pending: states.flatMap((s) => s.pending) };
}

function readStackFile(file: string): StoredState {
  const latest = (JSON.parse(readFileSync(file, "utf8")) as { checkpoint: { latest?: { resources?: Array<{ urn: string; type: string }>; pending_operations?: Array<{ type: string; resource: { urn: string; type: string } }> } } }).checkpoint.latest;
  const name = nameOfUrn;
  const isGroup = (type: string) => type.endsWith(":UserGroup");
  return {
    recorded: (latest?.resources ?? []).filter((r) => isGroup(r.type)).map((r) => name(r.urn)),
    pending: (latest?.pending_operations ?? []).filter((op) => isGroup(op.resource.type)).map((op) => ({ type: op.type, name: name(op.resource.urn) })),
  };
}

function firstErrorLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split("\n").find((line) => /^error:/.test(line.trim()))?.trim() ?? text.slice(0, 300);
}

function lockFiles(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "locks");
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".json"));
}

/** A checkpoint-free run's intents in the run records of the stack and its shards (file backend: the newest lease file of each). */
function readIntents(backendDir: string, stack: string): { intents: string[]; removing: string[] } {
  const root = path.join(backendDir, ".user-groups", "leases", PROJECT);
  const dirs = existsSync(root) ? readdirSync(root).filter((d) => d === stack || (d.startsWith(`${stack}.shard-`) && /^\.shard-\d+$/.test(d.slice(stack.length)))) : [];
  const intents: string[] = [];
  const removing: string[] = [];
  for (const dir of dirs) {
    const files = readdirSync(path.join(root, dir)).filter((f) => /^lease-\d+\.json$/.test(f));
    const newest = files.sort((a, b) => Number(/\d+/.exec(b)![0]) - Number(/\d+/.exec(a)![0]))[0];
    if (newest === undefined) continue;
    const record = JSON.parse(readFileSync(path.join(root, dir, newest), "utf8")) as { intents?: Array<{ resourceName: string }>; removing?: string[] };
    intents.push(...(record.intents ?? []).map((entry) => entry.resourceName));
    removing.push(...(record.removing ?? []));
  }
  return { intents, removing };
}

/** Starts the `up` (or destroy), and SIGKILLs its process tree (every shard's CLI running then) once `progress()` reaches `killAt`. */
async function upAndKill(run: () => Promise<unknown>, stack: string, progress: () => number, killAt: number, command: "up" | "destroy" = "up") {
  let killedPids: number[] = [];
  let doneAtKill = -1;
  const watcher = setInterval(() => {
    if (killedPids.length > 0) return;
    const done = progress();
    if (done < killAt) return;
    const clis = findPulumiUps(stack, command);
    if (clis.length === 0) return;
    doneAtKill = done;
    killedPids = clis.flatMap(killTree);
  }, 5);
  const outcome = await run().then(
    () => "finished",
    (error: unknown) => String((error as Error).message ?? error),
  );
  clearInterval(watcher);
  if (killedPids.length > 0 && !outcome.includes("SIGKILL")) throw new Error(`the killed up ended otherwise: ${outcome.slice(0, 500)}`);
  if (killedPids.length === 0 && outcome !== "finished") throw new Error(`the up failed before the kill: ${outcome.slice(0, 2000)}`);
  return { killedPids, doneAtKill };
}

export async function runCrashTrial(server: FakeServer, spec: CrashTrialSpec, workRoot: string, label: string, delayMs = 200): Promise<CrashTrialResult> {
  const started = Date.now();
  const dir = mkdtempSync(path.join(workRoot, `${label}-`));
  const backendDir = path.join(dir, "state");
  mkdirSync(backendDir);
  const stack = label;
  const options = {
    stack,
    workDir: dir,
    backendUrl: `file://${backendDir}`,
    passphrase: "bench-crash-passphrase",
    ...(spec.shardSize !== undefined ? { shardSize: spec.shardSize } : {}),
    envVars: {
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: KEY,
      USER_GROUPS_RETRY_BASE_DELAY_MS: "40",
      USER_GROUPS_RETRY_MAX_DELAY_MS: "400",
      PULUMI_HOME: path.join(workRoot, ".pulumi-home"),
    },
  };
  const problems: string[] = [];
  try {
    await server.reset();
    const delays = (["GET", "POST", "DELETE"] as const).map((method) => ({ method, action: "delay" as const, delayMs }));
    let declared = declaredGroups(spec.groups, "r1");
    const before = new Map<string, string>();
    let progress = () => server.groups().length;
    if (spec.kind === "rotate") {
      await provisionUserGroups({ ...options, groups: declared });
      for (const g of server.groups()) before.set(g.user_group_id, g.token);
      declared = declaredGroups(spec.groups, "r2");
      progress = () => server.groups().filter((g) => g.token !== before.get(g.user_group_id)).length;
    }
    if (spec.kind === "destroy") {
      await provisionUserGroups({ ...options, groups: declared });
      progress = () => spec.groups - server.groups().length;
    }
    server.setFaults(delays);
    const { killedPids, doneAtKill } =
      spec.kind === "destroy"
        ? await upAndKill(() => destroyUserGroups(options), stack, progress, spec.killAt, "destroy")
        : await upAndKill(() => provisionUserGroups({ ...options, groups: declared }), stack, progress, spec.killAt);
    // The server still carries out what reached it before the kill: wait until that has landed.
    // A bounded wait, not a condition: the server does not say how many requests it holds, and
    // each lands at most `delayMs` (the injected delay) after it arrived; the same pause is the
    // second the killed processes get before `survivors` counts them.
    await sleep(delayMs + 800);
    const survivors = killedPids.filter(isRunning).length;
    const doneAfterKill = progress();
    const killedState = readState(backendDir, stack);
    const killedIntents = readIntents(backendDir, stack);
    const pendingCreates = killedState.pending.filter((op) => op.type === "creating").map((op) => op.name);
    const onServer = new Set(server.groups().map((g) => `default.${g.user_group_id}`));
    const unaccounted = [...onServer].filter((name) => !killedState.recorded.includes(name) && !pendingCreates.includes(name) && !killedIntents.intents.includes(name));

    let report: RecoveryReport | undefined;
    try {
      if (spec.kind === "destroy") {
        // The next run is a plain up of the same groups: its takeover reads back what the killed destroy deleted.
        const takeovers: TakeoverReport[] = [];
        const up = await provisionUserGroups({ ...options, groups: declared, onTakeover: (t) => takeovers.push(t) });
        report = { removedLocks: takeovers.flatMap((t) => t.removedLocks.map((lock) => lock.key)), repairedFiles: takeovers.flatMap((t) => t.repairedFiles), pending: [], adopted: [], undeclaredPendingCreates: [], up };
        problems.push(...(await convergenceProblems(server, options, declared, up.groups, backendDir, stack)));
        await destroyUserGroups(options);
        if (server.groups().length > 0) problems.push(`${server.groups().length} groups left on the service after the destroy`);
        if (readState(backendDir, stack).recorded.length > 0) problems.push("the state still holds groups after the destroy");
      } else {
        report = await recoverStack({ ...options, groups: declared });
        problems.push(...(await convergenceProblems(server, options, declared, report.up.groups, backendDir, stack)));
      }
    } catch (error) {
      problems.push(`recovery failed: ${firstErrorLine(error)}`);
    }
    if (spec.kind === "rotate") {
      for (const g of server.groups()) if (g.token === before.get(g.user_group_id)) problems.push(`${g.user_group_id}: never rotated`);
    }
    if (survivors > 0) problems.push(`${survivors} killed processes still running`);
    return {
      ...spec,
      killed: killedPids.length > 0,
      doneAtKill,
      doneAfterKill,
      recordedAtKill: killedState.recorded.length,
      intentsAtKill: killedIntents.intents.length,
      removingAtKill: killedIntents.removing.length,
      pendingCreates: pendingCreates.length,
      pendingOther: killedState.pending.length - pendingCreates.length,
      adoptedExisting: report?.adopted.filter((name) => onServer.has(name)).length ?? 0,
      unaccounted: unaccounted.length,
      removedLocks: report?.removedLocks.length ?? 0,
      repairedFiles: report?.repairedFiles.map((f) => path.basename(f)) ?? [],
      survivors,
      problems,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    server.clearFaults();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function convergenceProblems(
  server: FakeServer,
  options: RunOptions,
  declared: ReturnType<typeof declaredGroups>,
  upGroups: ReadonlyArray<{ userGroupId: string; token?: string }>,
  backendDir: string,
  stack: string,
): Promise<string[]> {
  const problems: string[] = [];
  const ids = declared.map((g) => g.userGroupId).sort();
  const held = server.groups();
  // The API keeps ids unique per environment, so one group per id and the same id list mean no duplicate and no orphan.
  const heldIds = held.map((g) => g.user_group_id).sort();
  if (JSON.stringify(heldIds) !== JSON.stringify(ids)) problems.push(`server holds [${heldIds.join(", ")}], declared [${ids.join(", ")}]`);
  const state = readState(backendDir, stack);
  const recorded = [...state.recorded].sort();
  if (JSON.stringify(recorded) !== JSON.stringify(ids.map((id) => `default.${id}`))) problems.push(`state records [${recorded.join(", ")}]`);
  if (state.pending.length > 0) problems.push(`state still lists ${state.pending.length} pending operations`);
  for (const g of held) {
    const out = upGroups.find((u) => u.userGroupId === g.user_group_id);
    if (out?.token !== g.token) problems.push(`${g.user_group_id}: token output is not the server's token`);
  }
  if ((await previewUserGroups({ ...options, groups: declared })).changed) problems.push("preview shows changes");
  if ((await refreshUserGroups(options)).changed) problems.push("refresh found drift");
  if (lockFiles(backendDir).length > 0) problems.push("a lock file is left");
  return problems;
}

export interface CrashBenchSummary {
  readonly trials: number;
  readonly killed: number;
  readonly converged: number;
  readonly withPendingOperations: number;
  readonly neededAdoption: number;
  readonly unaccounted: number;
  readonly survivors: number;
  readonly repairedWrites: number;
  readonly results: readonly CrashTrialResult[];
}

export async function runCrashBench(options: CrashBenchOptions): Promise<CrashBenchSummary> {
  mkdirSync(options.workRoot, { recursive: true });
  const root = mkdtempSync(path.join(options.workRoot, "crash-"));
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], journalSize: 100_000 });
  const results: CrashTrialResult[] = [];
  try {
    for (const [index, spec] of trialPlan(options.trials, options.groups, options.kinds).entries()) {
      const shard = options.shardSize !== undefined ? { shardSize: options.shardSize } : {};
      const result = await runCrashTrial(server, { ...spec, ...shard }, root, `crash${index}`, options.delayMs);
      results.push(result);
      options.onTrial?.(result, index);
    }
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
  return {
    trials: results.length,
    killed: results.filter((r) => r.killed).length,
    converged: results.filter((r) => r.problems.length === 0).length,
    withPendingOperations: results.filter((r) => r.pendingCreates + r.pendingOther > 0).length,
    neededAdoption: results.filter((r) => r.adoptedExisting > 0).length,
    unaccounted: results.reduce((n, r) => n + r.unaccounted, 0),
    survivors: results.reduce((n, r) => n + r.survivors, 0),
    repairedWrites: results.filter((r) => r.repairedFiles.length > 0).length,
    results,
  };
}

export function describeTrial(r: CrashTrialResult, index: number): string {
  return (
    `trial ${index + 1} ${r.kind} ${r.groups} groups, kill at ${r.killAt}: ${r.killed ? `killed at ${r.doneAtKill} (${r.doneAfterKill} once landed)` : "NOT KILLED (finished first)"}, ` +
    `state had ${r.recordedAtKill} recorded, ${r.pendingCreates} pending creates, ${r.pendingOther} other pending; record had ${r.intentsAtKill} intents, ${r.removingAtKill} removing; ` +
    `adopted ${r.adoptedExisting} existing, ${r.unaccounted} unaccounted, ${r.removedLocks} stale locks removed, ${r.repairedFiles.length > 0 ? `repaired ${r.repairedFiles.join(" ")}, ` : ""}${r.survivors} survivors; ` +
    `${r.problems.length === 0 ? "converged" : `PROBLEMS: ${r.problems.join("; ")}`} (${r.seconds.toFixed(1)} s)`
  );
}
