// One run of one stack under its run lease: the delete guard, the engine call
// (or a preview answered from the state), and the run's result.
import type { Deployment, OutputMap } from "@pulumi/pulumi/automation";
import { type GroupSpec, groupOfResourceName, resourceNameOf, assertDeletionsAllowed, type DeleteGuardOptions, heldGroupNames, GroupChange, GroupResult, RunSummary, RunResult, RunOptions, Operation } from "../model";
import { EngineEdgeError } from "./engine-errors";
import { StackLockedError, withoutCredentials } from "../backend";
import { scrubSecrets, scrubText, secretValuesOf } from "./stack-config";
import { PROJECT_NAME } from "./workspace";
import { type LeaseStore, leaseStoreFor, type RunLease } from "../lease";
import { underRunLease } from "./takeover";
import { PREVIEW_ENGINE_ENV, proveUnchanged } from "./unchanged-state";
import { assertStateIsData } from "./state-data";
import { baseUrlNotAllowed, ChangeTracker, RunFailedError, missingCredentials, serviceFailure } from "./change-tracker";
import { PreparedRun, openStack, runError } from "./open-stack";
import { engineRun } from "./run-telemetry";
import { exportState } from "./state-document";

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

/** What a caller does under the run's lease, around the run (the shard directory's claims and forgets: shards/each-shard.ts). */
export interface LeasedRunHooks {
  /** Before the delete guard and the engine, with the state as read under the lease (the guard judges the same one); its error refuses the run before any change. */
  readonly before?: (state: Deployment) => Promise<void>;
  /** After a run that succeeded, while the lease is still held (not once it is lost); its error is ignored. */
  readonly after?: (result: RunResult) => Promise<void>;
}

/**
 * One run of an operation under the stack's run lease (or under `held`, a lease
 * the caller already holds: recover's final up). A dead run's leftovers are
 * taken over first, except by a preview, which changes nothing.
 */
export async function runOnce(
  operation: Operation,
  options: RunOptions,
  specs: readonly GroupSpec[],
  guard: DeleteGuardOptions,
  held?: RunLease,
  hooks: LeasedRunHooks = {},
): Promise<RunResult> {
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
      async (signal) => {
        const state = hooks.before ? await exportState(prepared.stack) : undefined;
        if (state) await hooks.before!(state);
        const result = await runPrepared(operation, options, specs, guard, prepared, signal, state);
        // A forget that failed leaves a stale entry, which only sends a later run to this shard again.
        if (hooks.after && !signal?.aborted) await hooks.after(result).catch(() => undefined);
        return result;
      },
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
  /** The state as read under the lease already, if it was. */
  stateRead?: Deployment,
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
    // One read of the state before the engine runs: the provider code the engine would load from it
    // (state-data.ts: nothing runs on a state this package did not write), and the delete guard.
    const state = stateRead ?? (await exportState(prepared.stack));
    assertStateIsData(state, options.stack);
    // Mass deletion needs an explicit word, decided from the state before the engine runs.
    const guarded = (operation === "up" && guard.allowDeleteAll !== true) || guard.maxDeletes !== undefined;
    if ((operation === "up" || operation === "destroy") && guarded) {
      const held = heldGroupNames(state);
      const declared = new Set(specs.map(resourceNameOf));
      const deleting = operation === "destroy" ? held : held.filter((name) => !declared.has(name));
      assertDeletionsAllowed({ operation, stack: options.stack, held: held.length, deleting }, guard);
    }
    let outputs: OutputMap | undefined;
    switch (operation) {
      case "preview":
        if (options.refresh !== true && previewedFromState(state, options, specs, tracker)) break;
        await engineRun("preview", options.stack, () => prepared.stack.preview({ ...common, ...refresh }));
        break;
      case "up":
        outputs = (await engineRun("up", options.stack, () => prepared.stack.up({ ...common, ...refresh }))).outputs;
        break;
      case "refresh":
        await engineRun("refresh", options.stack, () => prepared.stack.refresh(common));
        break;
      case "destroy":
        await engineRun("destroy", options.stack, () => prepared.stack.destroy(common));
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
    throw runFailure(operation, options, tracker, error);
  }
}

/**
 * What a failed engine run throws, from what the engine said (the tracker) rather
 * than the CLI's text: a refusal that names its own fix once for the run (a missing
 * credential, a base URL the job does not allow), Pulumi's own error where the run
 * never started, else a RunFailedError with each group's line. Secrets scrubbed.
 */
export function runFailure(operation: Operation, options: RunOptions, tracker: ChangeTracker, error: unknown): unknown {
  const translated = runError(error, options);
  const secrets = secretValuesOf(options);
  const lines = tracker.failureLines().map((line) => scrubText(line, secrets));
  const refusal = missingCredentials(tracker) ?? baseUrlNotAllowed(tracker) ?? serviceFailure(tracker, options.stack);
  if (refusal !== undefined) return refusal;
  // Where the run never started (a wrong passphrase), the engine's lines only repeat that.
  if (translated instanceof StackLockedError || translated instanceof EngineEdgeError || lines.length === 0) return translated;
  return scrubSecrets(new RunFailedError(operation, options.stack, lines, { cause: translated }), secrets);
}

/**
 * A preview answered from the stack's state when it proves that nothing would
 * change (unchanged-state.ts): the tracker gets the engine's "same" event for
 * each group and the caller's output one line saying so. False (and nothing
 * told) when the engine must run.
 */
function previewedFromState(state: Deployment, options: RunOptions, specs: readonly GroupSpec[], tracker: ChangeTracker): boolean {
  if ((options.envVars?.[PREVIEW_ENGINE_ENV] ?? process.env[PREVIEW_ENGINE_ENV]) === "always") return false;
  const proof = proveUnchanged(state, options.stack, specs);
  if (!proof.unchanged) return false;
  for (const event of proof.events) tracker.handle(event);
  options.onOutput?.(
    `Previewing stack ${JSON.stringify(options.stack)} from its state: it holds exactly the ${specs.length} declared groups, ` +
      `as declared; no changes (the engine was not run; ${PREVIEW_ENGINE_ENV}=always runs it).\n`,
  );
  return true;
}
