// Provisioning many groups from code: an inline Automation-API program that
// declares one UserGroup per entry. The engine runs in a child process; the
// program runs in this one.
import { type Deployment, type EngineEvent, LocalWorkspace, type LocalWorkspaceOptions, type OutputMap, type PulumiFn, type Stack, StackAlreadyExistsError } from "@pulumi/pulumi/automation";
import path from "node:path";
import { ENV_HINTS, MISSING_CREDENTIALS, MissingCredentialsError } from "../logic/credentials";
import { diffUserGroup } from "../logic/diff";
import type { CheckedInputs } from "../logic/inputs";
import { UserGroup } from "../resource/user-group";
import type { Environment } from "../wire/schemas";
import { type GroupSpec, userGroupArgsOf, validateGroups } from "./groups-spec";
import { groupOfResourceName, nameOfUrn, resourceNameOf } from "./resource-name";
import { EngineEdgeError, MissingPassphraseError, translateEngineError } from "./engine-errors";
import { isStackLocked, StackLockedError, withStackLockWait } from "./lock-wait";
import { scrubSecrets, scrubText, secretValuesOf, setStackConfig } from "./stack-config";
import { assertValidStackName } from "./stack-name";
import { makeRunDirectory, PROJECT_NAME, type PreparedWorkspace, prepareWorkspace } from "./workspace";
import { engineBackendEnv, withoutCredentials } from "./backend-url";
import { rateBudgetEnv } from "./rate-budget-env";
import { pulumiCommandOnPath } from "./pulumi-command";
import { compileCacheEnv } from "../compile-cache-dir";
import { fileBackendDir } from "./stale-lock";
import { removeLingeringTornSidecars } from "./torn-sidecars";
import { assertDeletionsAllowed, type DeleteGuardOptions, heldGroupNames, validDeleteGuard } from "./delete-guard";
import { type LeaseStore, leaseStoreFor, type RunLease } from "./run-lease";
import { type TakeoverReport, underRunLease } from "./takeover";
import { assertUserStackName } from "./shard-directory";
import { PREVIEW_ENGINE_ENV, proveUnchanged } from "./unchanged-state";
import { assertShardDeletionsAllowed, eachLimited, mergeRunResults, shardConcurrency, ShardedStack, type ShardPart } from "./shards";
import { UserGroupsError } from "../wire/errors";

export type GroupChange = "create" | "update" | "replace" | "delete" | "same" | "refresh" | "read" | "failed";

export interface GroupResult {
  /** Pulumi resource name: `<profile or "default">.<userGroupId>`. */
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly profile?: string;
  readonly change: GroupChange;
  /** For an update or replace: the inputs that change (a replace lists its reason first: userGroupId or profile). */
  readonly changedFields?: readonly string[];
  /**
   * For an update or replace: each changed input's old and new value (a key left
   * out: none); for a delete, the name it had. Inputs only: never a token.
   */
  readonly fieldChanges?: readonly FieldChange[];
  /** After up: what the service holds. The token is yours to keep secret. */
  readonly name?: string;
  readonly token?: string;
  readonly teamId?: number;
  readonly apiEnvironmentTag?: Environment;
}

/** What `UserGroupFleet.ensure` answers: the group as the stack holds it after the call, its token included. */
export interface EnsuredGroup extends GroupResult {
  readonly name: string;
  /** The group's token: yours to keep secret. */
  readonly token: string;
  readonly teamId: number;
}

/** One input of a group before and after (absent: not set). */
export interface FieldChange {
  readonly field: string;
  readonly old?: unknown;
  readonly new?: unknown;
}

export interface RunSummary {
  readonly create: number;
  readonly update: number;
  readonly replace: number;
  readonly delete: number;
  readonly same: number;
}

export interface RunResult {
  readonly operation: Operation;
  readonly stack: string;
  /** Without credentials (a postgres:// password is never in a result). */
  readonly backendUrl: string;
  readonly summary: RunSummary;
  /** True when anything would change / changed. */
  readonly changed: boolean;
  readonly groups: readonly GroupResult[];
}

/** A progress event, one per group step (the raw engine event rides along). */
export interface GroupEvent {
  readonly resourceName: string;
  readonly phase: "started" | "done" | "failed";
  readonly change: GroupChange;
  readonly message?: string;
  readonly engineEvent: EngineEvent;
}

export interface RunOptions {
  /** Stack name, e.g. "prod". */
  readonly stack: string;
  /**
   * Where the stack's settings live (keep it: Pulumi.<stack>.yaml holds the secrets salt), and the default file backend
   * (`state/`). Default `.user-groups/` in the current directory. Pulumi itself runs in a private directory of each run;
   * files there that Pulumi would read instead of ours, and symlinks, are refused (UntrustedWorkspaceError).
   */
  readonly workDir?: string;
  /**
   * Pulumi backend; default a file backend in `<workDir>/state`, or PULUMI_BACKEND_URL when set. A password in it is
   * passed to Pulumi in the environment only (PGPASSWORD for postgres://) and shown nowhere (results carry the URL without it).
   */
  readonly backendUrl?: string;
  /** Passphrase of the stack's secrets; default PULUMI_CONFIG_PASSPHRASE. */
  readonly passphrase?: string;
  /** Extra environment for the engine and provider (e.g. USER_GROUPS_API_KEY). The process environment is inherited. */
  readonly envVars?: Record<string, string>;
  /** Stack config to set before running, e.g. { "user-groups:apiKey": { value, secret: true } }. */
  readonly config?: Record<string, { value: string; secret?: boolean }>;
  readonly onEvent?: (event: GroupEvent) => void;
  /** Pulumi's own progress text. */
  readonly onOutput?: (text: string) => void;
  /** How many resource operations Pulumi runs at once (default: Pulumi's). */
  readonly parallel?: number;
  /** preview/up: read every group from the service first (out-of-band changes and deletions), as `pulumi up --refresh`. */
  readonly refresh?: boolean;
  /** How long to wait for a stack another run holds (jittered backoff); default 0: fail at once with StackLockedError. */
  readonly lockTimeoutMs?: number;
  /** Told before each wait for a locked stack. */
  readonly onLockWait?: (waitMs: number, waitedMs: number) => void;
  /** Told when this run took over what a dead run left (its lock, its pending creates): CONTRACT F7. */
  readonly onTakeover?: (report: TakeoverReport) => void;
  /**
   * File and PostgreSQL backends: how many groups one Pulumi stack holds before new groups go to the
   * stack's next shard, `<stack>.shard-<n>` (default 250, at most 5000). Groups never move: a smaller
   * size applies to groups added from then on. See docs/performance.md, "Scale".
   */
  readonly shardSize?: number;
}

export interface ProvisionOptions extends RunOptions, DeleteGuardOptions {
  /** The whole desired set (groups left out are deleted); checked at run time too, for JavaScript callers. */
  readonly groups: readonly GroupSpec[];
}

export type { DeleteGuardOptions } from "./delete-guard";

export type Operation = "preview" | "up" | "refresh" | "destroy";

/** Stacks this process is running now, by backend and name. */
const running = new Set<string>();

const GROUP_TYPE_SUFFIX = ":UserGroup";

function lockKey(backendUrl: string, stack: string): string {
  return `${backendUrl}\u0000${stack}`;
}

/** One UserGroup of a spec, named by resourceNameOf. */
export function declareGroup(spec: GroupSpec): UserGroup {
  return new UserGroup(resourceNameOf(spec), userGroupArgsOf(spec));
}

function programFor(specs: readonly GroupSpec[]) {
  return async () => {
    const groups: Record<string, unknown> = {};
    for (const spec of specs) {
      const resourceName = resourceNameOf(spec);
      const group = declareGroup(spec);
      groups[resourceName] = {
        userGroupId: group.userGroupId,
        name: group.name,
        token: group.token,
        teamId: group.teamId,
        apiEnvironmentTag: group.apiEnvironmentTag,
      };
    }
    return { groups };
  };
}

export function changeOf(op: string): GroupChange {
  switch (op) {
    case "create":
    case "update":
    case "delete":
    case "same":
    case "refresh":
    case "read":
      return op;
    case "replace":
    case "create-replacement":
    case "delete-replaced":
    case "discard-replaced":
      return "replace";
    default:
      return "update";
  }
}

function fieldChange(field: string, old: unknown, now: unknown): FieldChange {
  return { field, ...(old !== undefined ? { old } : {}), ...(now !== undefined ? { new: now } : {}) };
}

/** An engine diagnostic's text: ANSI colours and the "error: " prefix off. */
function diagnosticText(message: string): string {
  // biome-ignore lint: the escape character is what we strip
  return message.replace(/\u001b\[[0-9;]*m/g, "").replace(/^error:\s*/i, "").trim();
}

/** The engine's closing lines ("update failed") and the program's echo of a group's failure add nothing. */
const GENERIC_FAILURE = /^(update|preview|refresh|destroy) failed$|failed to register$/;

export interface ChangeTrackerOptions {
  /**
   * A targeted run's groups, by resource name. A step on any other group
   * (anything but "same") is recorded in `outsideBatch` and stops the run
   * through `signal`: defence in depth, should a target ever match more than
   * the names it was built from.
   */
  readonly batch?: ReadonlySet<string>;
}

/** Follows the engine's events and keeps, per group, the most telling change, and what the engine said of it. */
export class ChangeTracker {
  readonly changes = new Map<string, GroupChange>();
  readonly changedFields = new Map<string, string[]>();
  readonly fieldChanges = new Map<string, FieldChange[]>();
  /** The first error diagnostic the engine reported for each group, by resource name. */
  readonly diagnostics = new Map<string, string>();
  /** Error diagnostics of the run itself (no group named), generic closing lines left out. */
  readonly runDiagnostics: string[] = [];
  /** URNs of groups outside the batch that the run touched (see ChangeTrackerOptions.batch). */
  readonly outsideBatch: string[] = [];
  private readonly stop = new AbortController();
  private readonly batch: ReadonlySet<string> | undefined;
  constructor(
    private readonly onEvent?: (event: GroupEvent) => void,
    options: ChangeTrackerOptions = {},
  ) {
    this.batch = options.batch;
  }

  /** Aborted once the run touched a group outside its batch: pass it as the run's `signal`. */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  handle = (event: EngineEvent): void => {
    const diagnostic = event.diagnosticEvent;
    if (diagnostic && diagnostic.severity === "error") this.noteDiagnostic(diagnostic.urn, diagnosticText(diagnostic.message));
    const pre = event.resourcePreEvent?.metadata;
    const done = event.resOutputsEvent?.metadata;
    const failed = event.resOpFailedEvent?.metadata;
    const meta = pre ?? done ?? failed;
    if (!meta || !meta.type.endsWith(GROUP_TYPE_SUFFIX)) return;
    const resourceName = nameOfUrn(meta.urn);
    if (this.batch !== undefined && !this.batch.has(resourceName) && meta.op !== "same") {
      if (!this.outsideBatch.includes(meta.urn)) this.outsideBatch.push(meta.urn);
      this.stop.abort();
    }
    let change = changeOf(meta.op);
    // A refresh reports "refresh"; what changed shows in the diff it carries.
    if (meta.op === "refresh") change = (meta.diffs?.length ?? 0) > 0 ? "update" : "same";
    if (failed) change = "failed";
    const previous = this.changes.get(resourceName);
    if (previous !== "failed" && !(previous === "replace" && change !== "failed")) this.changes.set(resourceName, change);
    if (pre && (change === "update" || change === "replace") && pre.old?.inputs && pre.new?.inputs && !this.changedFields.has(resourceName)) {
      const olds = pre.old.inputs as Record<string, unknown>;
      const news = pre.new.inputs as Record<string, unknown>;
      const outcome = diffUserGroup(olds as Partial<CheckedInputs>, news as unknown as CheckedInputs);
      const fields = [...outcome.replaces, ...outcome.updates];
      this.changedFields.set(resourceName, fields);
      this.fieldChanges.set(resourceName, fields.map((field) => fieldChange(field, olds[field], news[field])));
    }
    if (pre && change === "delete" && typeof pre.old?.inputs?.name === "string" && !this.fieldChanges.has(resourceName)) {
      this.fieldChanges.set(resourceName, [{ field: "name", old: pre.old.inputs.name }]);
    }
    this.onEvent?.({
      resourceName,
      phase: failed ? "failed" : done ? "done" : "started",
      change,
      engineEvent: event,
    });
  };

  private noteDiagnostic(urn: string | undefined, text: string): void {
    if (text.length === 0 || GENERIC_FAILURE.test(text.split("\n")[0]!)) return;
    const onGroup = urn !== undefined && urn.includes(`${GROUP_TYPE_SUFFIX}::`);
    if (onGroup) {
      const resourceName = nameOfUrn(urn);
      if (!this.diagnostics.has(resourceName)) this.diagnostics.set(resourceName, text);
    } else if (!this.runDiagnostics.includes(text)) {
      this.runDiagnostics.push(text);
    }
  }

  /** What the engine said went wrong, one line per group or run-level problem (empty when it said nothing). */
  failureLines(): string[] {
    return [...[...this.diagnostics].map(([name, text]) => `${name}: ${text}`), ...this.runDiagnostics];
  }
}

/**
 * A targeted run that touched groups outside its batch (ChangeTrackerOptions.batch).
 * It was stopped at the first such step; the URNs are in `urns`, not in the
 * message, which a service may pass on to its own callers.
 */
export class OutsideBatchError extends UserGroupsError {
  constructor(
    readonly operation: Operation,
    readonly stackName: string,
    readonly urns: readonly string[],
  ) {
    super(
      "run_outside_batch",
      `A targeted ${operation} of stack "${stackName}" touched ${urns.length === 1 ? "a group" : `${urns.length} groups`} outside its batch, so it was stopped. ` +
        "This is a bug (of pulumi-user-groups or Pulumi's targeting): check the stack's groups (UserGroupFleet.list) and report it.",
    );
    this.name = "OutsideBatchError";
  }
}

/** Throws OutsideBatchError when the tracked run touched a group outside its batch. */
export function assertWithinBatch(tracker: ChangeTracker, operation: Operation, stackName: string): void {
  if (tracker.outsideBatch.length > 0) throw new OutsideBatchError(operation, stackName, [...tracker.outsideBatch]);
}

/**
 * A run the engine reported failed: what it said, from its diagnostic events
 * (per group where it named one), not scraped from the CLI's text. `cause` is
 * Pulumi's own CommandError.
 */
export class RunFailedError extends UserGroupsError {
  constructor(
    readonly operation: Operation,
    readonly stackName: string,
    readonly diagnostics: readonly string[],
    options?: { cause?: unknown },
  ) {
    super("run_failed", `${operation} of stack "${stackName}" failed:\n  ${diagnostics.join("\n  ")}`, options);
    this.name = "RunFailedError";
  }
}

/**
 * The provider's refusal for want of a base URL or key, when that is all that
 * went wrong: one MissingCredentialsError saying each distinct thing to set
 * (the same for every group of a profile), not one line per group.
 */
function missingCredentials(tracker: ChangeTracker): MissingCredentialsError | undefined {
  const texts = [...tracker.diagnostics.values(), ...tracker.runDiagnostics];
  if (texts.length === 0 || !texts.every((text) => MISSING_CREDENTIALS.test(text))) return undefined;
  return new MissingCredentialsError([...new Set(texts.map((text) => text.split("\n")[0]!))].join("\n"));
}

export interface PreparedRun {
  readonly stack: Stack;
  /** As given: it may hold a password (show withoutCredentials). */
  readonly backendUrl: string;
  /** Ends the run: the stack's settings saved, its run directory removed, the stack free for this process again. */
  readonly release: () => void;
}

/** The work directory and backend a run of these options uses (created if missing). */
export function workspaceOf(options: RunOptions): PreparedWorkspace {
  assertValidStackName(options.stack);
  return prepareWorkspace(
    options.workDir ?? path.join(process.cwd(), ".user-groups"),
    // An empty value counts as unset, as the Pulumi CLI treats it.
    options.backendUrl || options.envVars?.PULUMI_BACKEND_URL || process.env.PULUMI_BACKEND_URL || undefined,
    options.stack,
  );
}

export class StackNotFoundError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    backendUrl: string,
    options?: { cause?: unknown },
  ) {
    super("stack_not_found", `Stack "${stackName}" does not exist in ${withoutCredentials(backendUrl)}: nothing to read or delete. Nothing was changed.`, options);
    this.name = "StackNotFoundError";
  }
}

export { withoutCredentials } from "./backend-url";

export interface OpenStackOptions {
  /** Select the stack only: a missing stack is a StackNotFoundError, never a new empty stack. */
  readonly mustExist?: boolean;
}

export interface SelectedStack {
  readonly stack: Stack;
  /** As given: it may hold a password (show withoutCredentials). */
  readonly backendUrl: string;
  /** Saves the stack's settings and removes the run directory: call once done with the stack. */
  readonly dispose: () => void;
}

/**
 * The stack of these options with the given inline program, created if missing
 * (unless mustExist); no in-process lock. Pulumi runs in a private run directory
 * (workspace.ts); the backend URL reaches it in the environment only.
 */
export async function selectStack(options: RunOptions, program: PulumiFn, open: OpenStackOptions = {}): Promise<SelectedStack> {
  const passphrase = options.passphrase ?? options.envVars?.PULUMI_CONFIG_PASSPHRASE ?? process.env.PULUMI_CONFIG_PASSPHRASE;
  const passphraseFile = options.envVars?.PULUMI_CONFIG_PASSPHRASE_FILE ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
  // An empty one is what CI gives a job whose secret is missing (a fork's pull request): it would protect nothing.
  if (!passphrase && !passphraseFile) throw new MissingPassphraseError(passphrase === "");
  const workspace = workspaceOf(options);
  const runDir = makeRunDirectory(workspace, options.stack, options.envVars?.PULUMI_HOME || process.env.PULUMI_HOME || undefined);
  const args = { stackName: options.stack, projectName: PROJECT_NAME, program };
  const settings: LocalWorkspaceOptions = {
    workDir: runDir.dir,
    // No backend here: a file holds no URL (it may carry a password); PULUMI_BACKEND_URL below does.
    projectSettings: { name: PROJECT_NAME, runtime: "nodejs" },
    // What the options name explicitly (backend, passphrase) wins over the same variables in envVars.
    envVars: {
      PULUMI_SKIP_UPDATE_CHECK: "true",
      // The provider words its advice (a missing key) for a library's caller; the CLI says "cli" in envVars.
      [ENV_HINTS]: "automation",
      ...rateBudgetEnv(workspace.backendUrl),
      // The dynamic provider processes load @pulumi/pulumi before our code could turn the cache on.
      ...compileCacheEnv(options.envVars),
      ...options.envVars,
      ...engineBackendEnv(workspace.backendUrl),
      ...(passphrase !== undefined ? { PULUMI_CONFIG_PASSPHRASE: passphrase } : {}),
    },
  };
  try {
    settings.pulumiCommand = await pulumiCommandOnPath(settings.envVars);
    const select = () =>
      open.mustExist
        ? // Replicas reading a new PostgreSQL backend at once race to create Pulumi's table here too.
          selectRacingOthers(() => LocalWorkspace.selectStack(args, settings)).catch((error: unknown) => {
            throw isMissingStack(error) ? new StackNotFoundError(options.stack, workspace.backendUrl, { cause: error }) : error;
          })
        : selectRacingOthers(() => LocalWorkspace.createOrSelectStack(args, settings));
    const stack = await select().catch(async (error: unknown) => {
      // A run killed inside a checkpoint write can leave the stack file's sidecar torn, and then not even
      // `stack select` works, so no takeover could begin: a sidecar that stays torn is its dead writer's.
      const backendDir = fileBackendDir(workspace.backendUrl);
      if (backendDir === undefined || !(error instanceof Error) || !/failed to load checkpoint/.test(error.message)) throw error;
      if ((await removeLingeringTornSidecars(backendDir, PROJECT_NAME, options.stack)).length === 0) throw error;
      return select();
    });
    if (options.config && Object.keys(options.config).length > 0) await setStackConfig(stack, options.config);
    // A new stack's salt is kept at once, not only when the run ends (the process may not live that long).
    runDir.saveSettings();
    return { stack, backendUrl: workspace.backendUrl, dispose: runDir.dispose };
  } catch (error) {
    runDir.dispose();
    throw error;
  }
}

/**
 * Stack selection when other processes (replicas on a shared backend) may be
 * selecting the same new stack: one of them creating it between our look and
 * our create means it exists, and selecting it is right. Creating a stack takes
 * its lock, so the creator's lock (held, or released mid-check) refuses ours
 * for a moment; Pulumi's postgres backend creating its table on first use can
 * lose the same race ("failed to create table pulumi_state"). A second try
 * finds the stack, or the table.
 */
async function selectRacingOthers(select: () => Promise<Stack>): Promise<Stack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await select();
    } catch (error) {
      const lostRace =
        error instanceof StackAlreadyExistsError ||
        isStackLocked(error) ||
        (error instanceof Error && /failed to create table pulumi_state|pg_type_typname_nsp_index/.test(error.message));
      if (!lostRace || attempt >= 6) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 200 * attempt)));
    }
  }
}

/** Opens (or creates) the stack with a program of these groups, or with the given program; one run per stack in this process. */
export async function openStack(options: RunOptions, program: readonly GroupSpec[] | PulumiFn, open: OpenStackOptions = {}): Promise<PreparedRun> {
  const key = lockKey(workspaceOf(options).backendUrl, options.stack);
  if (running.has(key)) throw new StackLockedError(options.stack);
  running.add(key);
  try {
    const { stack, backendUrl, dispose } = await selectStack(options, typeof program === "function" ? program : programFor(program), open);
    return {
      stack,
      backendUrl,
      release: () => {
        running.delete(key);
        dispose();
      },
    };
  } catch (error) {
    running.delete(key);
    throw runError(error, options);
  }
}

/** Pulumi's `stack select` of a stack that does not exist. */
function isMissingStack(error: unknown): boolean {
  return error instanceof Error && /no stack named .* found/i.test(error.message);
}

/**
 * What a failed run on the stack of these options throws: every secret it knows
 * of scrubbed, Pulumi's lock (another process) as a StackLockedError, any other
 * error of Pulumi's as a UserGroupsError (engine-errors.ts).
 */
export function runError(error: unknown, options: RunOptions): unknown {
  const scrubbed = scrubSecrets(error, secretValuesOf(options));
  if (isStackLocked(scrubbed)) return scrubbed instanceof StackLockedError ? scrubbed : new StackLockedError(options.stack, { cause: scrubbed });
  // Pulumi's own errors (a missing CLI, a wrong passphrase, an unreachable backend...) in our vocabulary.
  return translateEngineError(scrubbed, options.stack);
}

function summaryOf(changes: Map<string, GroupChange>): RunSummary {
  const counts = { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
  for (const change of changes.values()) {
    if (change in counts) counts[change as keyof typeof counts] += 1;
  }
  return counts;
}

function groupResults(specs: readonly GroupSpec[], tracker: ChangeTracker, outputs: OutputMap | undefined): GroupResult[] {
  const changes = tracker.changes;
  const values = (outputs?.groups?.value ?? {}) as Record<string, Partial<GroupResult>>;
  const names = new Set<string>([...specs.map(resourceNameOf), ...changes.keys()]);
  return [...names].sort().map((resourceName) => {
    const spec = specs.find((s) => resourceNameOf(s) === resourceName);
    const value = values[resourceName] ?? {};
    const named = spec ?? groupOfResourceName(resourceName);
    const profile = named.profile;
    return {
      resourceName,
      userGroupId: named.userGroupId,
      ...(profile !== undefined ? { profile } : {}),
      change: changes.get(resourceName) ?? "same",
      ...(tracker.changedFields.has(resourceName) ? { changedFields: tracker.changedFields.get(resourceName) } : {}),
      ...(tracker.fieldChanges.has(resourceName) ? { fieldChanges: tracker.fieldChanges.get(resourceName) } : {}),
      ...(value.name !== undefined ? { name: value.name } : {}),
      ...(value.token !== undefined ? { token: value.token } : {}),
      ...(value.teamId !== undefined ? { teamId: value.teamId } : {}),
      ...(value.apiEnvironmentTag !== undefined ? { apiEnvironmentTag: value.apiEnvironmentTag } : {}),
    };
  });
}

/** Runs `attempt` waiting for a locked stack as long as `options.lockTimeoutMs` allows (default: fail fast). */
export function withLockWait<T>(options: RunOptions, attempt: () => Promise<T>): Promise<T> {
  return withStackLockWait(attempt, {
    stackName: options.stack,
    timeoutMs: options.lockTimeoutMs ?? 0,
    ...(options.onLockWait ? { onWait: options.onLockWait } : {}),
  });
}

async function run(operation: Operation, options: RunOptions & DeleteGuardOptions, specs: readonly GroupSpec[]): Promise<RunResult> {
  const guard = validDeleteGuard(options);
  const results = await eachShard(operation, options, specs, guard, (part, shardGuard) =>
    withLockWait(part.options, () => runOnce(operation, part.options, part.specs, shardGuard)),
  );
  return mergeRunResults(options.stack, results);
}

/** The root stack's groups (none when it does not exist yet), for a shard directory made now. */
async function rootHeld(options: RunOptions): Promise<string[] | undefined> {
  const deployment = await exportIfExists(options);
  return deployment === undefined ? undefined : heldGroupNames(deployment);
}

/** The state of the stack of these options, or undefined when there is no such stack. */
export async function exportIfExists(options: RunOptions): Promise<Deployment | undefined> {
  let selected: SelectedStack;
  try {
    selected = await selectStack(options, async () => ({}), { mustExist: true });
  } catch (error) {
    if (error instanceof StackNotFoundError) return undefined;
    throw runError(error, options);
  }
  try {
    return await selected.stack.exportStack();
  } catch (error) {
    throw runError(error, options);
  } finally {
    selected.dispose();
  }
}

/** Opens the shards of the stack of these options (shard-directory.ts). */
export async function openShards(options: RunOptions): Promise<ShardedStack> {
  assertUserStackName(options.stack); // before the work directory is made
  return ShardedStack.open(options, workspaceOf(options).backendUrl, () => rootHeld(options));
}

/**
 * Runs `work` on each shard a whole-set operation of `specs` touches, a few at
 * a time (an up first writes the new groups' shards). Mass deletion is judged
 * across all shards before any run; each shard's run then gets `shardGuard`.
 * Groups an up or destroy deleted leave the directory.
 */
export async function eachShard<T>(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  work: (part: ShardPart, shardGuard: DeleteGuardOptions) => Promise<T>,
  runOf: (result: T) => RunResult = (result) => result as RunResult,
): Promise<T[]> {
  const shards = await openShards(options);
  try {
    const parts = await shards.parts(specs, operation === "up");
    const settle = async (part: ShardPart, shardGuard: DeleteGuardOptions): Promise<T> => {
      const result = await work(part, shardGuard);
      if (operation === "up" || operation === "destroy") await shards.directory.forget(runOf(result).groups.filter((g) => g.change === "delete").map((g) => g.resourceName));
      return result;
    };
    if (parts.length === 1) return [await settle(parts[0]!, guard)];
    // Each shard's state read at most once, for the delete guard and to skip shards that were never made.
    const states = new Map<number, Promise<Deployment | undefined>>();
    const stateOf = (part: ShardPart) => {
      if (!states.has(part.shard)) states.set(part.shard, exportIfExists(part.options));
      return states.get(part.shard)!;
    };
    await assertShardDeletionsAllowed(operation, options.stack, parts, guard, stateOf);
    // A shard made by an earlier run that never got to it has no stack: a destroy or refresh has nothing there.
    const present = operation === "destroy" || operation === "refresh" ? await eachLimited(parts, shardConcurrency(), async (part) => ((await stateOf(part)) === undefined ? undefined : part)) : parts;
    return await eachLimited(
      present.filter((part): part is ShardPart => part !== undefined),
      shardConcurrency(),
      (part) => settle(part, { allowDeleteAll: true }),
    );
  } finally {
    await shards.close();
  }
}

/**
 * One run of an operation under the stack's run lease (or under `held`, a lease
 * the caller already holds: recover's final up). A dead run's leftovers are
 * taken over first, except by a preview, which changes nothing.
 */
export async function runOnce(operation: Operation, options: RunOptions, specs: readonly GroupSpec[], guard: DeleteGuardOptions, held?: RunLease): Promise<RunResult> {
  // refresh and destroy never run the program; they need a stack to work on, and never make one.
  const prepared = await openStack(options, specs, { mustExist: operation === "refresh" || operation === "destroy" });
  let store: LeaseStore | undefined;
  try {
    store = held ? undefined : leaseStoreFor(prepared.backendUrl, PROJECT_NAME, options.stack);
    return await underRunLease(
      {
        stack: prepared.stack,
        stackName: options.stack,
        backendUrl: prepared.backendUrl,
        store,
        ...(held ? { held } : {}),
        adopt: true,
        // A preview changes nothing, not even to take over a dead run: the next changing run does.
        takeOver: operation !== "preview",
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
        ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
        ...(options.onTakeover ? { onTakeover: options.onTakeover } : {}),
      },
      (signal) => runPrepared(operation, options, specs, guard, prepared, signal),
    );
  } catch (error) {
    throw runError(error, options);
  } finally {
    prepared.release();
    await store?.close();
  }
}

async function runPrepared(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  prepared: PreparedRun,
  signal: AbortSignal | undefined,
): Promise<RunResult> {
  const tracker = new ChangeTracker(options.onEvent);
  const common = {
    onEvent: tracker.handle,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
    ...(signal ? { signal } : {}),
  };
  const refresh = options.refresh === true ? { refresh: true } : {};
  try {
    // Mass deletion needs an explicit word, decided from the state before the engine runs.
    const guarded = (operation === "up" && guard.allowDeleteAll !== true) || guard.maxDeletes !== undefined;
    if ((operation === "up" || operation === "destroy") && guarded) {
      const held = heldGroupNames(await prepared.stack.exportStack());
      const declared = new Set(specs.map(resourceNameOf));
      const deleting = operation === "destroy" ? held : held.filter((name) => !declared.has(name));
      assertDeletionsAllowed({ operation, stack: options.stack, held: held.length, deleting }, guard);
    }
    let outputs: OutputMap | undefined;
    switch (operation) {
      case "preview":
        if (options.refresh !== true && (await previewedFromState(prepared, options, specs, tracker))) break;
        await prepared.stack.preview({ ...common, ...refresh });
        break;
      case "up":
        outputs = (await prepared.stack.up({ ...common, ...refresh })).outputs;
        break;
      case "refresh":
        await prepared.stack.refresh(common);
        break;
      case "destroy":
        await prepared.stack.destroy(common);
        break;
    }
    const summary = summaryOf(tracker.changes);
    return {
      operation,
      stack: options.stack,
      backendUrl: withoutCredentials(prepared.backendUrl),
      summary,
      changed: summary.create + summary.update + summary.replace + summary.delete > 0,
      groups: groupResults(operation === "destroy" ? [] : specs, tracker, outputs),
    };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const translated = runError(error, options);
    const secrets = secretValuesOf(options);
    const lines = tracker.failureLines().map((line) => scrubText(line, secrets));
    const missing = missingCredentials(tracker);
    if (missing !== undefined) throw missing;
    // Where the run never started (a wrong passphrase), the engine's lines only repeat that.
    if (translated instanceof StackLockedError || translated instanceof EngineEdgeError || lines.length === 0) throw translated;
    throw scrubSecrets(new RunFailedError(operation, options.stack, lines, { cause: translated }), secrets);
  }
}

/**
 * A preview answered from the stack's state when it proves that nothing would
 * change (unchanged-state.ts): the tracker gets the engine's "same" event for
 * each group and the caller's output one line saying so. False (and nothing
 * told) when the engine must run.
 */
async function previewedFromState(prepared: PreparedRun, options: RunOptions, specs: readonly GroupSpec[], tracker: ChangeTracker): Promise<boolean> {
  if ((options.envVars?.[PREVIEW_ENGINE_ENV] ?? process.env[PREVIEW_ENGINE_ENV]) === "always") return false;
  const proof = proveUnchanged(await prepared.stack.exportStack(), options.stack, specs);
  if (!proof.unchanged) return false;
  for (const event of proof.events) tracker.handle(event);
  options.onOutput?.(
    `Previewing stack ${JSON.stringify(options.stack)} from its state: it holds exactly the ${specs.length} declared groups, ` +
      `as declared; no changes (the engine was not run; ${PREVIEW_ENGINE_ENV}=always runs it).\n`,
  );
  return true;
}

/**
 * `pulumi up` of the given groups: creates, updates, rotates, replaces, and deletes
 * groups no longer listed. An up that would delete every group of a non-empty stack
 * is refused unless `allowDeleteAll`; one that would delete more than `maxDeletes`
 * groups is refused (DeletionRefusedError, before any change).
 */
export async function provisionUserGroups(options: ProvisionOptions): Promise<RunResult> {
  return run("up", options, validateGroups(options.groups));
}

/**
 * What `provisionUserGroups` would change, without changing anything. Without
 * `refresh`, a stack (or shard) whose state proves that nothing would change is
 * answered from the state without running the engine (docs/automation.md, "Big
 * stacks: shards"); USER_GROUPS_PREVIEW_ENGINE=always runs the engine every time.
 */
export async function previewUserGroups(options: ProvisionOptions): Promise<RunResult> {
  return run("preview", options, validateGroups(options.groups));
}

/** Reads every managed group back into the state (out-of-band changes, deletions). */
export async function refreshUserGroups(options: RunOptions): Promise<RunResult> {
  return run("refresh", options, []);
}

/** Deletes every group of the stack (refused before any change when `maxDeletes` is given and the stack holds more). */
export async function destroyUserGroups(options: RunOptions & Pick<DeleteGuardOptions, "maxDeletes">): Promise<RunResult> {
  return run("destroy", options, []);
}
