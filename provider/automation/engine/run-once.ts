// One declared run of one stack, under its run lease (shards/run-shard.ts holds
// it): the delete guard, the engine call (or a preview answered from the
// state), and the run's result.
import type { Deployment, Stack } from "@pulumi/pulumi/automation";
import { type GroupSpec, groupOfResourceName, resourceNameOf, assertDeletionsAllowed, type DeleteGuardOptions, heldGroupNames, GroupChange, GroupResult, RunSummary, RunResult, RunOptions, Operation } from "../model";
import { EngineEdgeError, runOnly } from "./pulumi-cli";
import type { ResolvedGroup } from "./program";
import { StackLockedError, withoutCredentials } from "../backend";
import { scrubSecrets, scrubText } from "../../client/redact";
import { secretValuesOf } from "./stack-config";
import { assertStateIsData, exportState, PREVIEW_ENGINE_ENV, proveUnchanged } from "./state";
import { baseUrlNotAllowed, ChangeTracker, RunFailedError, missingCredentials, serviceFailure } from "./change-tracker";
import { runError } from "./open-stack";
import { engineRun } from "./run-telemetry";
import { checkpointFreePlan, withCheckpointsWhereNeeded } from "./intents";
import { proofKeyOf } from "./created-entries";
import type { RunLease } from "../lease";

function summaryOf(changes: Map<string, GroupChange>): RunSummary {
  const counts = { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
  for (const change of changes.values()) {
    if (change in counts) counts[change as keyof typeof counts] += 1;
  }
  return counts;
}

function groupResults(specs: readonly GroupSpec[], tracker: ChangeTracker, resolved: ReadonlyMap<string, ResolvedGroup> | undefined): GroupResult[] {
  const changes = tracker.changes;
  const names = new Set<string>([...specs.map(resourceNameOf), ...changes.keys()]);
  return [...names].sort().map((resourceName) => {
    const spec = specs.find((s) => resourceNameOf(s) === resourceName);
    const value: Partial<ResolvedGroup> = resolved?.get(resourceName) ?? {};
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

/** Where a declared run works: the stack (its program declares the specs), its backend, and the run's own tracker. */
export interface DeclaredRunPlace {
  readonly stack: Stack;
  readonly backendUrl: string;
  readonly tracker: ChangeTracker;
  /** The run lease's signal: aborted when the lease is lost. */
  readonly signal: AbortSignal | undefined;
  /** The run lease (undefined: none): a checkpoint-free up or destroy writes its intents to its record (intents.ts). */
  readonly lease?: RunLease | undefined;
  /** The state as read under the lease already, if it was. */
  readonly state?: Deployment | undefined;
  /** What the stack's program (programFor) noted of each group as the engine answered its `up`. */
  readonly resolved: ReadonlyMap<string, ResolvedGroup>;
}

/**
 * One run of an operation on a stack whose program declares `specs` (its whole
 * set), already under the stack's run lease (shards/run-shard.ts holds it): the
 * provider code check and the delete guard on the state, the engine call (or a
 * preview answered from the state), and the run's result.
 */
export async function runDeclared(operation: Operation, options: RunOptions, specs: readonly GroupSpec[], guard: DeleteGuardOptions, place: DeclaredRunPlace): Promise<RunResult> {
  const { stack, backendUrl, tracker, signal, state: stateRead, resolved } = place;
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
    const state = stateRead ?? (await exportState(stack));
    assertStateIsData(state, options.stack);
    // Mass deletion needs an explicit word, decided from the state before the engine runs.
    const guarded = (operation === "up" && guard.allowDeleteAll !== true) || guard.maxDeletes !== undefined;
    if ((operation === "up" || operation === "destroy") && guarded) {
      const held = heldGroupNames(state);
      const declared = new Set(specs.map(resourceNameOf));
      const deleting = operation === "destroy" ? held : held.filter((name) => !declared.has(name));
      assertDeletionsAllowed({ operation, stack: options.stack, held: held.length, deleting }, guard);
    }
    let ranUp = false;
    switch (operation) {
      case "preview":
        if (options.refresh !== true && previewedFromState(state, options, specs, tracker)) break;
        await engineRun("preview", options.stack, () => stack.preview({ ...common, ...refresh }));
        break;
      case "up":
        // Without a checkpoint per step where the record's intents keep a crash consistent (intents.ts); never with a refresh first.
        await withCheckpointsWhereNeeded(
          { stack, lease: place.lease, proofKey: () => proofKeyOf(stack, state, options.stack) },
          options.refresh === true ? undefined : checkpointFreePlan(operation, state, specs),
          () => engineRun("up", options.stack, () => runOnly(stack).up({ ...common, ...refresh })),
        );
        ranUp = true;
        break;
      case "refresh":
        await engineRun("refresh", options.stack, () => runOnly(stack).refresh(common));
        break;
      case "destroy":
        await withCheckpointsWhereNeeded(
          { stack, lease: place.lease, proofKey: () => proofKeyOf(stack, state, options.stack) },
          checkpointFreePlan(operation, state, specs),
          () => engineRun("destroy", options.stack, () => runOnly(stack).destroy(common)),
        );
        break;
    }
    const summary = summaryOf(tracker.changes);
    return {
      operation,
      stack: options.stack,
      backendUrl: withoutCredentials(backendUrl),
      summary,
      changed: summary.create + summary.update + summary.replace + summary.delete > 0,
      groups: groupResults(operation === "destroy" ? [] : specs, tracker, ranUp ? resolved : undefined),
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
