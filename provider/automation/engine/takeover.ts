// Taking over a dead run's stack (docs/architecture.md, "Names and locks"; CONTRACT
// F7). A run that holds the run lease and finds a Pulumi lock whose holder is
// provably gone:
//   1. waits until the dead run can send nothing more (its provider processes
//      exit within seconds of losing their engine: provider/resource/engine-watchdog.ts),
//   2. removes that lock (and, on a file backend, the files a killed checkpoint write tore),
//   3. records the pending creates in the run record (in the backend, never in the work directory),
//   4. refreshes the groups whose update or delete was pending (targeted),
//   5. adopts exactly those groups: a targeted `up` declaring each as the dead run
//      did (its pending create's inputs) with adoptExisting, so that a retried
//      request finds the group the dead run made, with its token, once,
//   6. then clears the pending creates (the state written back without them:
//      no engine run), once every one of them is dealt with.
// Steps 3-6 survive an interruption: the next holder finds the same pending
// creates in the state. The record's adopt list is never trusted alone (issue 32
// item 5): an entry is adopted only if the stack's own checkpoint holds a
// pending create of that very group (our resource type, this stack's URN); any
// other entry (a record planted, or left by an older release) is refused, said
// on the run's output, and dropped from the record. A fleet's record-first
// sign-ups (the record's `created` entries, which no pending create proves) are
// adopted only with a valid proof under the stack's secret (lease/created-proof.ts);
// an unproven one is refused the same way (run_record_entry_unproven).
import type { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { readdirSync, readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { USER_GROUP_TYPE } from "../../resource/user-group";
import { type GroupSpec, groupSpecSchema, type RunOptions, nameOfUrn, resourceNameOf, urnOf, type PendingOperation, type PulumiLock, type TakeoverReport } from "../model";
// provision.ts runs its operations through this module; declareGroup is only called at run time.
import { declareGroup } from "./program";
import { markWorkspace, withRunMarks } from "./pulumi-cli";
import { acquireRunLease, type CreatedEntry, RUN_ID_ENV, type RunLease, type AdoptEntry, classifyLockHolder, HERE, type Here, type LeaseStore, type RunClaim } from "../lease";
import { fileBackendDir, repairTornWrites, StackLockedError } from "../backend";
import { PROJECT_NAME } from "./workspace";
import { assertStateIsData, exportState } from "./state";
import { clearPendingCreates } from "./clear-pending";
import { proofKeyOf, provenCreated } from "./created-entries";
import { hasIntents, settleIntents } from "./intents";
import { type Clock, systemClock } from "../../clock";
import { automationInstruments, inSpan, setSpanAttributes } from "../telemetry";
import { engineRun } from "./run-telemetry";
import { runOnly } from "./pulumi-cli";

/** How long a takeover waits for a dead run to fall quiet when it cannot watch its processes (another host, an unknown run). */
export const QUIET_MS = 5_000;
/** How long a dead run's processes on this host get to exit by themselves before they are killed. */
const ORPHAN_GRACE_MS = 10_000;

interface RawPendingOperation {
  type?: string;
  resource?: { urn?: string; type?: string; inputs?: Record<string, unknown> };
}

interface RawDeployment {
  pending_operations?: RawPendingOperation[];
  resources?: Array<{ urn?: string; type?: string }>;
}

function isGroup(op: RawPendingOperation): op is RawPendingOperation & { resource: { urn: string; type: string } } {
  return op.resource?.type?.endsWith(":UserGroup") === true && typeof op.resource.urn === "string";
}

/** A pending operation on one of our groups of this very stack: our resource type, and the URN this stack gives that group. */
function isOwnGroup(op: RawPendingOperation, stackName: string): op is RawPendingOperation & { resource: { urn: string; type: string } } {
  if (op.resource?.type !== USER_GROUP_TYPE || typeof op.resource.urn !== "string") return false;
  return op.resource.urn === urnOf(stackName, PROJECT_NAME, USER_GROUP_TYPE, nameOfUrn(op.resource.urn));
}

/** The state's pending operations on groups. */
export function pendingOf(deployment: unknown): PendingOperation[] {
  const operations = (deployment as RawDeployment | undefined)?.pending_operations ?? [];
  return operations.filter(isGroup).map((op) => ({ type: op.type ?? "unknown", resourceName: nameOfUrn(op.resource.urn) }));
}

/** Each pending create of a group, with the inputs the run declared it with. */
export function pendingCreatesOf(deployment: unknown): AdoptEntry[] {
  const operations = (deployment as RawDeployment | undefined)?.pending_operations ?? [];
  return operations
    .filter(isGroup)
    .filter((op) => op.type === "creating")
    .map((op) => ({ resourceName: nameOfUrn(op.resource.urn), inputs: op.resource.inputs ?? {} }));
}

/** This stack's own pending creates of groups (our type, this stack's URN), with their inputs. */
export function ownPendingCreatesOf(deployment: unknown, stackName: string): AdoptEntry[] {
  const operations = (deployment as RawDeployment | undefined)?.pending_operations ?? [];
  return operations
    .filter((op) => op.type === "creating" && isOwnGroup(op, stackName))
    .map((op) => ({ resourceName: nameOfUrn(op.resource!.urn!), inputs: op.resource!.inputs ?? {} }));
}

/**
 * The record's adopt entries checked against the stack's own pending creates:
 * an entry is kept only when the checkpoint holds a pending create of that
 * group (the same name, so the same URN and user group id) with the same
 * inputs; every other one is refused, with why. The record is outside data
 * (a row of a table, a file in the backend): only the state says what a run of
 * this stack left half made.
 */
export function checkAdoptEntries(recorded: readonly AdoptEntry[], ownPending: readonly AdoptEntry[]): { kept: AdoptEntry[]; refused: { resourceName: string; why: string }[] } {
  const pending = new Map(ownPending.map((entry) => [entry.resourceName, entry]));
  const kept: AdoptEntry[] = [];
  const refused: { resourceName: string; why: string }[] = [];
  for (const entry of recorded) {
    const create = pending.get(entry.resourceName);
    if (create === undefined) refused.push({ resourceName: entry.resourceName, why: "the stack's state holds no pending create of it" });
    else if (!isDeepStrictEqual(create.inputs, entry.inputs)) refused.push({ resourceName: entry.resourceName, why: "its inputs are not those of the state's pending create" });
    else kept.push(entry);
  }
  return { kept, refused };
}

/** The adopt list after this takeover: what the record held, and the state's pending creates (newer inputs win). */
export function mergeAdopt(recorded: readonly AdoptEntry[], pending: readonly AdoptEntry[]): AdoptEntry[] {
  const byName = new Map<string, AdoptEntry>();
  for (const entry of [...recorded, ...pending]) byName.set(entry.resourceName, entry);
  return [...byName.values()].sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
}

/** A group spec from a pending create's inputs, adopting; undefined when they are not a valid spec of that very group. */
export function adoptingSpec(entry: AdoptEntry): GroupSpec | undefined {
  const { name, userGroupId, mapping, properties, rotationTrigger, profile } = entry.inputs as Record<string, unknown>;
  const candidate = Object.fromEntries(
    Object.entries({ name, userGroupId, mapping, properties, rotationTrigger, profile, adoptExisting: true }).filter(([, v]) => v !== undefined),
  );
  const parsed = groupSpecSchema.safeParse(candidate);
  if (!parsed.success || resourceNameOf(parsed.data) !== entry.resourceName) return undefined;
  return parsed.data;
}

/** Pids of this host's processes that belong to one of these runs (their environment names it). Linux; elsewhere none are seen. */
export function processesOfRuns(runIds: readonly string[]): number[] {
  if (runIds.length === 0) return [];
  const marks = runIds.map((id) => `${RUN_ID_ENV}=${id}`);
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") continue; // exited, not yet reaped
      const environment = readFileSync(`/proc/${entry}/environ`, "utf8").split("\u0000");
      if (marks.some((mark) => environment.includes(mark))) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

export interface QuietOptions {
  readonly here?: Here;
  readonly quietMs?: number;
  readonly graceMs?: number;
  readonly clock?: Clock;
  readonly processesOf?: (runIds: readonly string[]) => number[];
  readonly kill?: (pid: number) => void;
}

/**
 * Returns once the dead runs can send nothing more: on this host, once no
 * process of theirs runs (after `graceMs` the stragglers are killed); for a run
 * of another host, or a dead lock no run of ours claims, after `quietMs` from
 * `since` (the moment it was found dead). Returns how many were killed.
 */
export async function waitUntilQuiet(claims: readonly RunClaim[], unclaimedDeadLocks: number, since: number, options: QuietOptions = {}): Promise<number> {
  const here = options.here ?? HERE;
  const clock = options.clock ?? systemClock;
  const processesOf = options.processesOf ?? processesOfRuns;
  const kill = options.kill ?? ((pid: number) => process.kill(pid, "SIGKILL"));
  const local = claims.filter((c) => c.host === here.host).map((c) => c.runId);
  if (claims.some((c) => c.host !== here.host) || unclaimedDeadLocks > 0 || (local.length > 0 && process.platform !== "linux")) {
    const left = since + (options.quietMs ?? QUIET_MS) - clock.now();
    if (left > 0) await clock.sleep(left);
  }
  const deadline = clock.now() + (options.graceMs ?? ORPHAN_GRACE_MS);
  let killed = 0;
  for (;;) {
    const running = processesOf(local);
    if (running.length === 0) return killed;
    if (clock.now() >= deadline) {
      for (const pid of running) {
        try {
          kill(pid);
          killed += 1;
        } catch {
          // exited meanwhile
        }
      }
    }
    await clock.sleep(100);
  }
}

export interface TakeoverOptions {
  readonly lease: RunLease;
  /** The stack; its workspace carries the run id to the engine and providers. */
  readonly stack: Stack;
  readonly stackName: string;
  readonly backendUrl: string;
  /** Adopt the pending creates with a targeted up (true), or leave them in the record for the caller (recover). */
  readonly adopt: boolean;
  /** Look at the state's pending operations even without a dead run's trace (recover: someone may have removed its lock by hand). */
  readonly always?: boolean;
  /** The stack outputs the adopting up's program returns (the fleet's marker). */
  readonly outputs?: () => Record<string, unknown>;
  readonly onOutput?: (text: string) => void;
  readonly parallel?: number;
  readonly quiet?: QuietOptions;
  /** The shard this stack is (its engine runs' spans say so), if it is one. */
  readonly shard?: number;
  /** The run's options, to settle a dead checkpoint-free run's intents (intents.ts); absent: they stay for the next holder. */
  readonly intents?: RunOptions;
}

/** What a run's processes carry (pulumi-cli/run-marks.ts): its run id, and where the backend fences (PostgreSQL, object stores) its epoch. */
function marksOf(lease: RunLease): Record<string, string> {
  return { [RUN_ID_ENV]: lease.runId, ...(lease.store.fenceEnv?.(lease.current) ?? {}) };
}

/** The lease's marks on the stack's workspace itself, until the returned function puts it back: for a workspace that runs nothing else meanwhile (recover's). */
export function markRun(stack: Stack, lease: RunLease): () => void {
  return markWorkspace(stack.workspace as LocalWorkspace, marksOf(lease));
}

/** Runs `body` as the lease's run of this stack: the commands it starts carry the marks; other commands of the same workspace meanwhile do not. */
export function underRunMarks<T>(stack: Stack, lease: RunLease, body: () => Promise<T>): Promise<T> {
  return withRunMarks(stack.workspace as LocalWorkspace, marksOf(lease), body);
}

function stackUrnOf(deployment: RawDeployment): string | undefined {
  return deployment.resources?.find((r) => r.type === "pulumi:pulumi:Stack")?.urn;
}

/**
 * Takes over what dead runs left, if anything: see the file header. Returns
 * undefined when there was nothing to take over. A Pulumi lock held by a live
 * process, or by another host's run not proven dead, is left alone (the run
 * then meets it and waits, as always).
 */
export async function takeOver(options: TakeoverOptions): Promise<TakeoverReport | undefined> {
  const { lease } = options;
  const here = options.quiet?.here ?? HERE;
  const since = (options.quiet?.clock ?? systemClock).now();
  const claims = lease.current.unfinished;
  const locks = await lease.store.pulumiLocks();
  const verdicts = locks.map((lock) => ({ lock, ...classifyLockHolder(lock, here, claims) }));
  if (verdicts.some((v) => v.verdict === "live" || v.verdict === "unknown")) {
    // An engine on a private copy (object stores) would not meet this lock itself: the run is refused here instead.
    if (lease.store.privateEngine) throw new StackLockedError(options.stackName);
    return undefined;
  }
  if (!options.always && locks.length === 0 && claims.length === 0 && lease.current.adopt.length === 0 && (lease.current.created ?? []).length === 0 && !hasIntents(lease.current)) return undefined;

  // Something to take over: its span (what was taken over, from whom) and count (docs/observability.md).
  const oldEpochs = claims.map((c) => c.epoch).filter((e): e is number => e !== undefined);
  return inSpan(
    "user_groups.takeover",
    {
      "user_groups.stack": options.stackName,
      "user_groups.lease.epoch": lease.epoch,
      "user_groups.takeover.old_epoch": oldEpochs.length > 0 ? Math.max(...oldEpochs) : undefined,
      "user_groups.takeover.dead_runs": claims.length,
      "user_groups.takeover.removed_locks": locks.length,
    },
    async (span) => {
      const report = await takeOverTraced(options, locks, verdicts, claims, since);
      setSpanAttributes(span, () => ({
        "user_groups.takeover.pending_count": report.pending.length,
        "user_groups.takeover.adopted_count": report.adopted.length,
        "user_groups.takeover.not_adopted_count": report.notAdopted.length,
        "user_groups.takeover.killed_processes": report.killedProcesses,
      }));
      const measure = automationInstruments();
      measure?.takeovers.add(1);
      if (report.adopted.length > 0) measure?.adopted.add(report.adopted.length);
      return report;
    },
    { startTime: since },
  );
}

async function takeOverTraced(
  options: TakeoverOptions,
  locks: readonly PulumiLock[],
  verdicts: ReadonlyArray<{ verdict: string; claim?: RunClaim | undefined }>,
  claims: readonly RunClaim[],
  since: number,
): Promise<TakeoverReport> {
  const { lease } = options;
  const unclaimed = verdicts.filter((v) => v.verdict === "gone" && v.claim === undefined).length;
  // A run with an older epoch is fenced (the backend refuses its writes, its providers send nothing): proven stopped
  // as far as the state and the service go, whether or not its processes still run. Only the others are waited for.
  const unfenced = claims.filter((c) => c.epoch === undefined);
  const killedProcesses = await waitUntilQuiet(unfenced, unclaimed, since, options.quiet);
  for (const lock of locks) await lease.store.removePulumiLock(lock);
  const backendDir = fileBackendDir(options.backendUrl);
  // A dead writer (its lock, or its unfinished claim: killed after letting go of the lock) may have torn its last checkpoint's sidecar.
  const deadWriter = locks.length > 0 || claims.length > 0;
  const repairedFiles = backendDir !== undefined && deadWriter ? repairTornWrites(backendDir, PROJECT_NAME, options.stackName) : [];

  const exported = await exportState(options.stack);
  // The refresh and the adopting up below load providers from this state: it must be data this package writes (F10).
  assertStateIsData(exported, options.stackName);
  const deployment = exported.deployment as RawDeployment;
  const pending = pendingOf(deployment);
  const ownPending = ownPendingCreatesOf(deployment, options.stackName);
  // The record's entries only where the state itself holds the pending create (see the file header).
  const { kept, refused } = checkAdoptEntries(lease.current.adopt, ownPending);
  for (const entry of refused) {
    options.onOutput?.(`Not adopting ${JSON.stringify(entry.resourceName)} listed in the run record of stack ${JSON.stringify(options.stackName)}: ${entry.why} (a record planted, or left by an older run); it is not touched.\n`);
  }
  // The record's `created` entries (a fleet's sign-ups): only those proven under this stack's secret (lease/created-proof.ts).
  // Worked out only when some entry needs it (PBKDF2 of the passphrase: a takeover of pending creates alone goes without).
  const proofKey = (lease.current.created ?? []).length > 0 || hasIntents(lease.current) ? await proofKeyOf(options.stack, exported, options.stackName) : undefined;
  // A dead checkpoint-free run's intents: its deletes read back, its creates the service holds become `created` entries.
  await settleIntents(options, exported, proofKey);
  const created = await provenCreated(options, proofKey, lease.current.created ?? []);
  const adopt = mergeAdopt(kept, ownPending);
  // Written down before anything changes: a takeover interrupted from here on is finished by the next holder (the state keeps the pending creates until step 6).
  await lease.update({ unfinished: [], adopt });
  const common = {
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
    signal: lease.signal,
  };
  const stackUrn = stackUrnOf(deployment);
  const operations = deployment.pending_operations ?? [];
  if (operations.some((op) => op.type !== "creating")) {
    const held = new Set((deployment.resources ?? []).map((r) => r.urn));
    const touched = operations.filter((op) => op.type !== "creating" && held.has(op.resource?.urn)).map((op) => op.resource!.urn!);
    // The stack itself as a target reads nothing: only the groups whose update or delete was cut short are read back.
    // Pending creates stay (a refresh run without a person keeps them): the proof of what to adopt.
    const target = [...new Set([...(stackUrn ? [stackUrn] : []), ...touched])];
    await engineRun("refresh", options.stackName, () => runOnly(options.stack).refresh({ ...(target.length > 0 ? { target } : {}), ...common }));
  }

  let adopted: string[] = [];
  let notAdopted: string[] = refused.map((entry) => entry.resourceName);
  // A fleet's record-first sign-ups (the record's proven `created`): no pending create, their proof says this stack's holder made them.
  if (options.adopt && (adopt.length > 0 || created.length > 0)) {
    const outcome = await adoptGroups(options, adopt, common, created);
    adopted = outcome.adopted;
    notAdopted = [...notAdopted, ...outcome.notAdopted];
  }
  // The pending creates are cleared once dealt with (all adopted, or the caller adopts them itself: recover); a group
  // whose adoption failed keeps its pending create, the proof the next holder needs to adopt it.
  const settled = !options.adopt || adopt.every((entry) => adopted.includes(entry.resourceName) || adoptingSpec(entry) === undefined);
  if (operations.some((op) => op.type === "creating") && settled) await clearPendingCreates(options.stack, options.stackName, options.lease);
  return { removedLocks: locks, repairedFiles, pending, adopted, notAdopted, killedProcesses };
}

async function adoptGroups(
  options: TakeoverOptions,
  adopt: readonly AdoptEntry[],
  common: { onOutput?: (text: string) => void; parallel?: number; signal: AbortSignal },
  created: readonly AdoptEntry[] = [],
): Promise<{ adopted: string[]; notAdopted: string[] }> {
  const specs = new Map<string, GroupSpec>();
  for (const entry of [...adopt, ...created]) {
    const spec = adoptingSpec(entry);
    if (spec) specs.set(entry.resourceName, spec);
  }
  const done = new Set<string>();
  if (specs.size > 0) {
    const failed = new Set<string>();
    await engineRun("up", options.stackName, () =>
      runOnly(options.stack).up({
        program: async () => {
          for (const spec of specs.values()) declareGroup(spec);
          return options.outputs?.() ?? {};
        },
        target: [...specs.keys()].map((name) => urnOf(options.stackName, PROJECT_NAME, USER_GROUP_TYPE, name)),
        continueOnError: true,
        onEvent: (event) => {
          const failedStep = event.resOpFailedEvent?.metadata;
          if (failedStep?.type === USER_GROUP_TYPE) failed.add(nameOfUrn(failedStep.urn));
        },
        ...common,
      }),
      options.shard,
    ).catch((error: unknown) => {
        // A group that failed is kept for the next run; a run that failed as a whole fails this one.
        if (failed.size === 0) throw error;
      });
    for (const name of specs.keys()) if (!failed.has(name)) done.add(name);
  }
  // The entries dealt with leave the record (adopted, or not a valid spec); any added meanwhile (a fleet's sign-ups under this lease) stay.
  const dealtWith = (entries: readonly AdoptEntry[]) => new Set(entries.filter((entry) => done.has(entry.resourceName) || !specs.has(entry.resourceName)).map((entry) => entry.resourceName));
  const adoptDone = dealtWith(adopt);
  const createdDone = dealtWith(created);
  await options.lease.updateWith((record) => ({
    adopt: record.adopt.filter((entry) => !adoptDone.has(entry.resourceName)),
    created: (record.created ?? []).filter((entry) => !createdDone.has(entry.resourceName)),
  }));
  return { adopted: [...done], notAdopted: [...adopt, ...created].filter((entry) => !done.has(entry.resourceName)).map((entry) => entry.resourceName) };
}

/**
 * Adopts a fleet's record-first sign-ups (the record's `created` entries) into
 * the state under the lease the caller holds: one targeted `up` declaring each
 * with adoptExisting; the adopted entries leave the record. Only entries proven
 * under `proofKey` are adopted (the others are refused: provenCreated). Answers which.
 */
export async function adoptCreated(
  options: Pick<TakeoverOptions, "lease" | "stack" | "stackName" | "outputs" | "onOutput" | "parallel" | "shard"> & { readonly proofKey: Buffer | undefined },
  created: readonly CreatedEntry[],
): Promise<{ adopted: string[]; notAdopted: string[] }> {
  const common = { ...(options.onOutput ? { onOutput: options.onOutput } : {}), ...(options.parallel !== undefined ? { parallel: options.parallel } : {}), signal: options.lease.signal };
  const proven = await provenCreated(options, options.proofKey, created);
  const outcome = await adoptGroups({ ...options, backendUrl: "", adopt: true }, [], common, proven);
  const refused = created.filter((entry) => !proven.includes(entry)).map((entry) => entry.resourceName);
  return { adopted: outcome.adopted, notAdopted: [...outcome.notAdopted, ...refused] };
}

/** How long a run that lost its lease gives its engine to stop on the Automation API's SIGINT before its processes are killed. */
export const LOST_RUN_GRACE_MS = 2_000;

/**
 * A run that lost its lease stops for good: the Automation API interrupts its
 * engine (SIGINT), which then goes on retrying its refused checkpoint writes for
 * half a minute and more (Pulumi retries a failed write ten times); what still
 * runs of it after LOST_RUN_GRACE_MS (on the clock) is killed (this host's
 * processes carrying its run id). Fenced, it could change nothing anyway; this
 * ends its callers' wait. Answers the pids it killed.
 */
export async function stopLostRun(runId: string, clock: Clock = systemClock): Promise<number[]> {
  await clock.sleep(LOST_RUN_GRACE_MS);
  const killed: number[] = [];
  for (const pid of processesOfRuns([runId])) {
    try {
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // exited meanwhile
    }
  }
  return killed;
}

export interface LeasedRunOptions {
  readonly stack: Stack;
  readonly stackName: string;
  readonly backendUrl: string;
  /** The backend's lease store; undefined: a backend without a lease (no takeover). */
  readonly store: LeaseStore | undefined;
  /** A lease the caller holds already (recover's own up): used as it is, no second takeover. */
  readonly held?: RunLease;
  readonly adopt: boolean;
  /** False for a run that must not change the state (preview): it holds the lease and takes nothing over. */
  readonly takeOver?: boolean;
  readonly outputs?: () => Record<string, unknown>;
  readonly onOutput?: (text: string) => void;
  readonly parallel?: number;
  readonly onTakeover?: (report: TakeoverReport) => void;
  readonly quiet?: QuietOptions;
  readonly intents?: RunOptions;
}

/**
 * Runs `body` holding the stack's run lease (throws StackLockedError while a
 * live run holds it), after taking over what dead runs left. `body` gets the
 * lease's signal: aborted if the lease is lost, so that the run stops.
 */
export async function underRunLease<T>(options: LeasedRunOptions, body: (signal: AbortSignal | undefined, lease: RunLease | undefined) => Promise<T>): Promise<T> {
  const { held } = options;
  if (held) return underRunMarks(options.stack, held, () => body(held.signal, held));
  if (options.store === undefined) return body(undefined, undefined);
  const lease = await acquireRunLease(options.store, options.stackName);
  const stopOnLoss = () => void stopLostRun(lease.runId);
  lease.signal.addEventListener("abort", stopOnLoss, { once: true });
  try {
    // The run's marks reach the commands of this run only (underRunMarks), not the workspace's other users.
    return await underRunMarks(options.stack, lease, async () => {
      const report = options.takeOver === false ? undefined : await takeOver({ ...options, lease });
      if (report) options.onTakeover?.(report);
      if (lease.lost) throw lease.signal.reason;
      return body(lease.signal, lease);
    });
  } catch (error) {
    // A run that failed because it was fenced (a paused replica, resumed) says so: one renewal tells whether the lease is still ours.
    if (!lease.lost) await lease.update({}).catch(() => undefined);
    throw lease.lost ? lease.signal.reason : error;
  } finally {
    lease.signal.removeEventListener("abort", stopOnLoss);
    await lease.release();
  }
}
