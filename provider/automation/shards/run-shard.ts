// One pipeline for every run of one shard, a whole-set operation's
// (operations/provision.ts, recover's final up) and a fleet batch's alike: the
// wait for the shard's lock, its run lease and the takeover of a dead run's
// leftovers (engine/takeover.ts), the directory's rule under that lease
// (directory-rule.ts), and the run's change tracking. The caller brings only
// what differs: where the stack comes from and what the engine is asked.
import type { Deployment, Stack } from "@pulumi/pulumi/automation";
import { type DeleteGuardOptions, type GroupSpec, type Operation, resourceNameOf, type RunOptions, type RunResult } from "../model";
import { assertWithinBatch, ChangeTracker, openStack, PROJECT_NAME, runDeclared, runError, underRunLease, withLockWait, exportState, programFor, type ResolvedGroup } from "../engine";
import { type LeaseStore, leaseStoreFor, type RunLease } from "../lease";
import type { ShardDirectory } from "./directory";
import { ShardClaims } from "./directory-rule";
import type { ShardPart } from "./sharded-stack";
import { UserGroupsError } from "../../wire/errors";

/** A shard's stack for one run, with its run lease store. */
export interface OpenedShard {
  readonly stack: Stack;
  readonly backendUrl: string;
  /** The shard's run lease store (undefined: a backend without one, or a run under a lease its caller holds). */
  readonly store: LeaseStore | undefined;
  /** The run is done with it (a whole-set run closes what it opened; a fleet keeps its shards open). */
  release(): Promise<void>;
}

/** Which shard: its number, its Pulumi stack's options (stack name, lock wait), the directory (none: the rule does not apply). */
export interface ShardOf {
  readonly shard: number;
  readonly options: RunOptions;
  readonly directory: ShardDirectory | undefined;
}

/** What the engine is asked to do, under the lease, with the rule's claims made. */
export interface ShardRunContext {
  readonly stack: Stack;
  readonly backendUrl: string;
  /** This try's tracker (a new one for each try of the lock wait). */
  readonly tracker: ChangeTracker;
  /** The lease's signal: aborted when the lease is lost. */
  readonly signal: AbortSignal | undefined;
  /** The run lease (undefined: a backend without one): a checkpoint-free run writes its intents to its record. */
  readonly lease: RunLease | undefined;
  /** A whole-set run's state as read under the lease (the rule and the delete guard judge the same one). */
  readonly state: Deployment | undefined;
  /** A targeted up's groups whose entry names another shard: not to be created here (the others are claimed). */
  readonly moved: ReadonlyMap<string, number>;
}

export interface ShardRun<T> {
  readonly operation: Operation;
  /** The stack for one try (called inside each try of the lock wait). */
  readonly open: () => Promise<OpenedShard>;
  /**
   * The groups of a targeted run (a fleet batch): the tracker stops a run that
   * touches any other, an up claims them, a destroy forgets those its state no
   * longer holds, and a run the engine failed is answered (for isolation), not
   * thrown. Undefined: the run declares the shard's whole set, `declared`.
   */
  readonly targets?: readonly string[];
  /** A whole-set run's groups (claimed before it when its state does not hold them). */
  readonly declared?: readonly string[];
  /** A lease the caller holds already (recover's final up): no second takeover. */
  readonly held?: RunLease;
  /** The caller waits for the lock already (recover, around its whole recovery): this run does not wait again. */
  readonly inCallersWait?: boolean;
  /** The takeover's outputs (a fleet's marker). */
  readonly outputs?: () => Record<string, unknown>;
  readonly engine: (run: ShardRunContext) => Promise<T>;
}

/** A run's outcome: its value, or (a targeted run the engine failed) the failure, with what the engine said in the tracker. */
export interface ShardRunOutcome<T> {
  readonly value?: T;
  readonly tracker: ChangeTracker;
  readonly failure?: { readonly error: unknown; readonly lines: readonly string[] };
}

/**
 * Runs `run.engine` on one shard: waits for its lock (`options.lockTimeoutMs`),
 * holds its run lease after taking over what a dead run left (a preview takes
 * nothing over), keeps the directory's rule under that lease, and tracks the
 * run's changes. A whole-set run's failure is thrown in our vocabulary; a
 * targeted run's own errors (a lock never freed, a lost lease, a step outside
 * its targets) and a failure before the engine said anything are thrown, any
 * other failure is answered with the tracker.
 */
export async function runShard<T>(shard: ShardOf, run: ShardRun<T>): Promise<ShardRunOutcome<T>> {
  const { options } = shard;
  const targets = run.targets === undefined ? undefined : new Set(run.targets);
  const newTracker = () => new ChangeTracker(options.onEvent, targets ? { batch: targets } : {});
  let tracker = newTracker();
  const attempt = async (): Promise<T> => {
    const opened = await run.open();
    try {
      return await underRunLease(
        {
          stack: opened.stack,
          stackName: options.stack,
          backendUrl: opened.backendUrl,
          store: opened.store,
          ...(run.held ? { held: run.held } : {}),
          adopt: true,
          // A preview changes nothing, not even to take over a dead run: the next changing run does.
          takeOver: run.operation !== "preview",
          ...(run.outputs ? { outputs: run.outputs } : {}),
          ...(options.onOutput ? { onOutput: options.onOutput } : {}),
          ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
          ...(options.onTakeover ? { onTakeover: options.onTakeover } : {}),
          // A dead checkpoint-free run's intents are settled with the service this run's options name (engine/intents.ts).
          intents: options,
        },
        (signal, lease) => {
          tracker = newTracker();
          return underTheRule(shard, run, { stack: opened.stack, backendUrl: opened.backendUrl, tracker, signal, lease });
        },
      );
    } catch (error) {
      // A whole-set run's errors in our vocabulary (a lock as StackLockedError, for the lock wait); a targeted run's as they are, for isolation.
      throw targets === undefined ? runError(error, options) : error;
    } finally {
      await opened.release();
    }
  };
  if (targets === undefined) return { value: run.inCallersWait ? await attempt() : await withLockWait(options, attempt), tracker };
  try {
    const value = run.inCallersWait ? await attempt() : await withLockWait(options, attempt);
    assertWithinBatch(tracker, run.operation, options.stack);
    return { value, tracker };
  } catch (error) {
    assertWithinBatch(tracker, run.operation, options.stack);
    const engineSpoke = tracker.changes.size > 0 || tracker.diagnostics.size > 0 || tracker.runDiagnostics.length > 0;
    // Our own errors (a lock never freed, a lost lease, a refusal) fail the run whole; the engine's failure is isolated.
    if (error instanceof UserGroupsError || !engineSpoke) throw error;
    return { tracker, failure: { error, lines: [...tracker.runDiagnostics] } };
  }
}

/** The run under the lease, between the directory rule's claims before it and its forgets after it. */
async function underTheRule<T>(shard: ShardOf, run: ShardRun<T>, place: Omit<ShardRunContext, "state" | "moved">): Promise<T> {
  const claims = shard.directory ? new ShardClaims(shard.directory, shard.options.stack, shard.shard) : undefined;
  const { stack, signal } = place;
  if (run.targets === undefined) {
    const state = claims ? await exportState(stack) : undefined;
    if (state) await claims!.beforeWholeSet(state, run.declared ?? []);
    const value = await run.engine({ ...place, state, moved: new Map() });
    // A forget that failed leaves a stale entry, which only sends a later run to this shard again.
    const deleted = [...place.tracker.changes].filter(([, change]) => change === "delete").map(([name]) => name);
    if (claims && !signal?.aborted) await claims.afterWholeSet(deleted).catch(() => undefined);
    return value;
  }
  const moved = claims && run.operation === "up" ? await claims.claimTargets(run.targets) : new Map<string, number>();
  try {
    return await run.engine({ ...place, state: undefined, moved });
  } finally {
    // Still under the lease, whether the destroy failed or not (it may have deleted some); not once the lease is lost.
    if (claims && run.operation === "destroy" && !signal?.aborted) {
      await exportState(stack)
        .then((state) => claims.forgetGone(run.targets!, state))
        .catch(() => undefined);
    }
  }
}

/** One shard's run of a whole-set operation as planned (each-shard.ts): its part, its guard, the directory (up and destroy). */
export interface PlannedRun {
  readonly part: ShardPart;
  readonly guard: DeleteGuardOptions;
  readonly directory: ShardDirectory | undefined;
}

/**
 * A whole-set operation's run of one shard through runShard: a stack opened for
 * it with a program of the shard's specs, its own lease store, and runDeclared.
 * `recovering`: recover's final up, inside its lock wait and under its lease
 * (none on a backend without one), with its specs (adoptExisting set).
 */
export async function runPlanned(
  operation: Operation,
  planned: PlannedRun,
  recovering?: { readonly lease: RunLease | undefined; readonly specs: readonly GroupSpec[] },
): Promise<RunResult> {
  const { part, guard, directory } = planned;
  const held = recovering?.lease;
  const specs = recovering?.specs ?? part.specs;
  const { options } = part;
  // The program notes each group's outputs as the engine answers (no `stack output` read after the run).
  const resolved = new Map<string, ResolvedGroup>();
  const program = programFor(specs, resolved);
  const outcome = await runShard(
    { shard: part.shard, options, directory },
    {
      operation,
      declared: specs.map(resourceNameOf),
      ...(held ? { held } : {}),
      ...(recovering ? { inCallersWait: true } : {}),
      open: async () => {
        // refresh and destroy never run the program; they need a stack to work on, and never make one.
        const prepared = await openStack(options, program, { mustExist: operation === "refresh" || operation === "destroy" });
        let store: LeaseStore | undefined;
        try {
          store = held ? undefined : leaseStoreFor(prepared.backendUrl, PROJECT_NAME, options.stack);
        } catch (error) {
          prepared.release();
          throw error;
        }
        return {
          stack: prepared.stack,
          backendUrl: prepared.backendUrl,
          store,
          release: async () => {
            prepared.release();
            await store?.close();
          },
        };
      },
      engine: (context) => runDeclared(operation, options, specs, guard, { ...context, resolved }),
    },
  );
  return outcome.value!;
}
