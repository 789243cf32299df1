// Opening one stack for one run: its work directory, the Pulumi workspace with
// the run's environment, selecting (or creating) the stack, its state, and the
// translation of what Pulumi throws into our errors.
import { type Deployment, LocalWorkspace, type LocalWorkspaceOptions, type PulumiFn, Stack, StackAlreadyExistsError } from "@pulumi/pulumi/automation";
import path from "node:path";
import { ENV_HINTS } from "../../logic/credentials";
import { type GroupSpec, assertValidStackName, RunOptions } from "../model";
import { MissingPassphraseError, pulumiCommandOnPath, translateEngineError } from "./pulumi-cli";
import { isStackLocked, StackLockedError, withStackLockWait, engineBackendEnv, withoutCredentials, rateBudgetEnv, fileBackendDir, checkBackend, removeLingeringTornSidecars, stackFilePresence } from "../backend";
import { scrubSecrets } from "../../client/redact";
import { secretValuesOf, setStackConfig } from "./stack-config";
import { makeRunDirectory, PROJECT_NAME, type PreparedWorkspace, prepareWorkspace } from "./workspace";
import { compileCacheEnv } from "../../compile-cache-dir";
import { UserGroupsError } from "../../wire/errors";
import { programFor } from "./program";
import { RunLeaseHeldError } from "../lease";
import { inSpan, LeaseWait } from "../telemetry";
import { exportState, isTornRead, tornStateError } from "./state";
import { systemClock } from "../../clock";

/** Stacks this process is running now, by backend and name. */
const running = new Set<string>();

function lockKey(backendUrl: string, stack: string): string {
  return `${backendUrl}\u0000${stack}`;
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

export interface OpenStackOptions {
  /** Select the stack only: a missing stack is a StackNotFoundError, never a new empty stack. */
  readonly mustExist?: boolean;
  /**
   * No `pulumi stack select` at all (one CLI process less): the caller's first command on the stack says whether it
   * exists (exportIfExists on a file backend). Every command of the Automation API and of ours names the stack.
   */
  readonly unselected?: boolean;
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
export function selectStack(options: RunOptions, program: PulumiFn, open: OpenStackOptions = {}): Promise<SelectedStack> {
  // Its span (docs/observability.md): the stack's name only, never the backend URL (it may hold a password).
  return inSpan("user_groups.stack.open", { "user_groups.stack": options.stack }, () => selectStackTraced(options, program, open));
}

async function selectStackTraced(options: RunOptions, program: PulumiFn, open: OpenStackOptions): Promise<SelectedStack> {
  const passphrase = options.passphrase ?? options.envVars?.PULUMI_CONFIG_PASSPHRASE ?? process.env.PULUMI_CONFIG_PASSPHRASE;
  const passphraseFile = options.envVars?.PULUMI_CONFIG_PASSPHRASE_FILE ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
  // An empty one is what CI gives a job whose secret is missing (a fork's pull request): it would protect nothing.
  if (!passphrase && !passphraseFile) throw new MissingPassphraseError(passphrase === "");
  const workspace = workspaceOf(options);
  // An object store's bucket missing, its credentials refused, its conditions ignored: one coded line, before Pulumi
  // says it otherwise (a lock, an engine error); once per backend per process (backends/index.ts).
  if (workspace.backendUrl) await checkBackend(workspace.backendUrl);
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
      // CONTRACT F10: nothing a state, a program or a comment says makes the engine fetch a plugin (after envVars: not
      // to be turned off). Ours need none: the dynamic provider's plugin comes with the engine's Node.js host.
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    },
  };
  try {
    settings.pulumiCommand = await pulumiCommandOnPath(settings.envVars);
    // On a file backend its files say whether the stack is there (stack-file.ts): no `pulumi stack select` for one
    // that is (every command names the stack), none failing for one that is not (a `stack init` at once, or
    // StackNotFoundError where it must exist). Looked at again on each try: another process may have made it meanwhile.
    const presence = () => stackFilePresence(workspace.backendUrl, PROJECT_NAME, options.stack);
    const select = (): Promise<Stack> => {
      const now = open.unselected ? "present" : presence();
      if (now === "present") return unselectedStack(args, settings);
      if (open.mustExist) {
        if (now === "absent") return Promise.reject(new StackNotFoundError(options.stack, workspace.backendUrl));
        // Replicas reading a new PostgreSQL backend at once race to create Pulumi's table here too.
        return selectRacingOthers(() => LocalWorkspace.selectStack(args, settings)).catch((error: unknown) => {
          throw isMissingStack(error) ? new StackNotFoundError(options.stack, workspace.backendUrl, { cause: error }) : error;
        });
      }
      // Another process creating it meanwhile: StackAlreadyExistsError (or its lock), and the next try finds it.
      let first = true;
      return selectRacingOthers(() => {
        const found = first ? now : presence();
        first = false;
        if (found === "present") return unselectedStack(args, settings);
        return found === "absent" ? LocalWorkspace.createStack(args, settings) : LocalWorkspace.createOrSelectStack(args, settings);
      });
    };
    const stack = await select().catch(async (error: unknown) => {
      // A run killed inside a checkpoint write can leave the stack file's sidecar torn, and then not even
      // `stack select` works, so no takeover could begin: a sidecar that stays torn is its dead writer's.
      // One torn by a live writer (rewriting it in place) is whole again by then: selected on the second try.
      const backendDir = fileBackendDir(workspace.backendUrl);
      if (backendDir === undefined || !isTornRead(error)) throw error;
      await removeLingeringTornSidecars(backendDir, PROJECT_NAME, options.stack);
      return select().catch((again: unknown) => {
        throw isTornRead(again) ? tornStateError(options.stack, again) : again;
      });
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

/** The stack as LocalWorkspace.selectStack gives it, but with no `pulumi stack select` run for it. */
async function unselectedStack(args: { stackName: string; program: PulumiFn }, settings: LocalWorkspaceOptions): Promise<Stack> {
  const workspace = await LocalWorkspace.create({ ...settings, program: args.program });
  return Stack.select(args.stackName, Object.create(workspace, { selectStack: { value: () => Promise.resolve() } }) as LocalWorkspace);
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
      await systemClock.sleep(Math.floor(systemClock.random() * 200 * attempt));
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

/** Runs `attempt` waiting for a locked stack as long as `options.lockTimeoutMs` allows (default: fail fast). */
export async function withLockWait<T>(options: RunOptions, attempt: () => Promise<T>): Promise<T> {
  // The wait for the run lease (and for Pulumi's own lock), traced and measured (lease/telemetry.ts).
  const wait = new LeaseWait(options.stack);
  try {
    return await wait.run(() =>
      withStackLockWait(
        () =>
          attempt().catch((error: unknown) => {
            // The lease's refusals are told by acquireRunLease; Pulumi's own lock is told here.
            if (isStackLocked(error) && !((error as { cause?: unknown }).cause instanceof RunLeaseHeldError)) wait.refused("pulumi_lock");
            throw error;
          }),
        {
          stackName: options.stack,
          timeoutMs: options.lockTimeoutMs ?? 0,
          ...(options.onLockWait ? { onWait: options.onLockWait } : {}),
        },
      ),
    );
  } catch (error) {
    wait.gaveUp(error);
    throw error;
  }
}

/** The state of the stack of these options, or undefined when there is no such stack. */
export async function exportIfExists(options: RunOptions): Promise<Deployment | undefined> {
  // On a file backend the export itself says whether the stack exists: no `pulumi stack select` before it. Anything
  // but a state or a missing stack (a torn file, a wrong passphrase) is left to the selecting path below, which
  // knows each of them; it reads again.
  const backendUrl = workspaceOf(options).backendUrl;
  if (fileBackendDir(backendUrl) !== undefined) {
    if (stackFilePresence(backendUrl, PROJECT_NAME, options.stack) === "absent") return undefined;
    const unselected = await selectStack(options, async () => ({}), { unselected: true }).catch(() => undefined);
    if (unselected !== undefined) {
      try {
        return await exportState(unselected.stack, []);
      } catch (error) {
        if (isMissingStack(error)) return undefined;
      } finally {
        unselected.dispose();
      }
    }
  }
  let selected: SelectedStack;
  try {
    selected = await selectStack(options, async () => ({}), { mustExist: true });
  } catch (error) {
    if (error instanceof StackNotFoundError) return undefined;
    throw runError(error, options);
  }
  try {
    return await exportState(selected.stack);
  } catch (error) {
    throw runError(error, options);
  } finally {
    selected.dispose();
  }
}
