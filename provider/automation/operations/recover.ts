// Recovery of a stack whose `pulumi up` was killed (kill -9, a lost CI runner):
// a stale lock, operations the state lists as pending, and groups the service
// created whose answer never reached the state. Proven by test/reliability/crash.test.ts
// and bench/crash.ts. Every run of ours does the same by itself once it holds
// the run lease (takeover.ts); `recover` is the explicit form, which adopts the
// groups of a groups file and reports what it did.
//
// Which server groups get adopted: exactly those whose create the state lists
// as pending, and a fleet's record-first sign-ups the run record lists as
// created with a proof under the stack's secret (lease/created-proof.ts; an
// unproven one is refused, run_record_entry_unproven). The engine persists a pending "creating" operation before it asks
// the provider to create, so every group a killed run may have created is on
// that list; a group with a declared id that is neither in the state nor on the
// list is someone else's, and the recovery's `up` refuses it ("already exists")
// as any `up` would. The provider itself cannot tell the two apart.
//
// The list survives an interrupted recovery in the run record, in the backend
// beside the lease (run-lease.ts), never in the work directory: a file planted
// there decides nothing.
import { type GroupSpec, validateGroups, type DeleteGuardOptions, validDeleteGuard, resourceNameOf, type ProvisionOptions, type RunOptions, type RunResult, type PendingOperation, type TakeoverReport } from "../model";
import type { Stack } from "@pulumi/pulumi/automation";
import { eachShard, mergeRunResults, type PlannedRun, runPlanned } from "../shards";
import { openStack, runError, withLockWait, workspaceOf, markRun, pendingCreatesOf, pendingOf, takeOver, PROJECT_NAME, assertOwnProviderCode, withOwnProviderCode, engineRun, exportState, importState, runOnly } from "../engine";
import { acquireRunLease, leaseStoreFor, classifyLockHolder, HERE, type LeaseStore, type RunLease } from "../lease";
import { inSpan, setSpanAttributes } from "../telemetry";
import { LiveLockError } from "../backend";

export type { PendingOperation } from "../model";

export interface RecoveryReport {
  /** Lock files (file backend) or lock keys (PostgreSQL) of dead runs that were removed. */
  readonly removedLocks: readonly string[];
  /** Torn metadata sidecars and temporary files of the dead run's last checkpoint write that were removed. */
  readonly repairedFiles: readonly string[];
  /** What the state listed as pending before the recovery (cleared by it). */
  readonly pending: readonly PendingOperation[];
  /** Groups the recovery's `up` adopted (pending creates, including ones an interrupted recovery or takeover recorded). */
  readonly adopted: readonly string[];
  /** Pending creates of groups no longer declared: left on the server, named here so that someone looks. */
  readonly undeclaredPendingCreates: readonly string[];
  /** The final `up`. */
  readonly up: RunResult;
}

/**
 * Brings a stack back after an interrupted run: removes a dead run's lock
 * (only when its holder is provably gone: same host and its pid is dead, or a
 * dead run of ours held the run lease when it was taken; and the torn files of
 * a checkpoint write it was killed in), waits until the dead run can send
 * nothing more, refreshes with the pending creates cleared (each recorded group
 * is read back, so a rotation that happened but was never recorded lands its
 * token in the state), then runs `up` of `groups` with adoptExisting on exactly
 * the groups whose create was pending. `groups` must be what the interrupted
 * run declared (or the new desired list).
 */
export interface RecoverOptions extends ProvisionOptions {
  /**
   * Writes this package's own provider text back into every group of the state before anything
   * else (after a person reviewed an UntrustedProviderCodeError). Resources of a type this package
   * never makes are not touched: the recovery still refuses them.
   */
  readonly rewriteProviders?: boolean;
  /**
   * Take the stack's run lease even from a run that still holds it. A file
   * backend cannot fence a run's late writes, so its lease is never taken from a
   * run of another host, or from a live pid of this one, by itself: a person
   * who knows that run is gone says so with this (`user-groups recover --break-lease`).
   */
  readonly breakLease?: boolean;
}

export async function recoverStack(options: RecoverOptions): Promise<RecoveryReport> {
  return inSpan("user_groups.recover", { "user_groups.operation": "recover", "user_groups.stack": options.stack }, async (span) => {
    const report = await recoverTraced(options);
    setSpanAttributes(span, () => ({ "user_groups.takeover.adopted_count": report.adopted.length, "user_groups.takeover.removed_locks": report.removedLocks.length }));
    return report;
  });
}

async function recoverTraced(options: RecoverOptions): Promise<RecoveryReport> {
  const specs = validateGroups(options.groups);
  const guard = validDeleteGuard(options); // before any change: a bad maxDeletes is refused up front
  // A sharded stack is recovered shard by shard, each with the groups it holds or is to hold.
  const reports = await eachShard("up", options, specs, guard, (planned) => recoverShard(planned, options.rewriteProviders === true, options.breakLease === true));
  return {
    removedLocks: reports.flatMap((r) => r.removedLocks),
    repairedFiles: reports.flatMap((r) => r.repairedFiles),
    pending: reports.flatMap((r) => r.pending),
    adopted: reports.flatMap((r) => r.adopted).sort(),
    undeclaredPendingCreates: reports.flatMap((r) => r.undeclaredPendingCreates).sort(),
    up: mergeRunResults(options.stack, reports.map((r) => r.up)),
  };
}

async function recoverShard(planned: PlannedRun, rewriteProviders: boolean, breakLease: boolean): Promise<RecoveryReport> {
  const { options } = planned.part;
  const store = leaseStoreFor(workspaceOf(options).backendUrl, PROJECT_NAME, options.stack);
  try {
    return await withLockWait(options, () => recoverOnce(planned, store, rewriteProviders, breakLease));
  } finally {
    await store?.close();
  }
}

async function recoverOnce(planned: PlannedRun, store: LeaseStore | undefined, rewriteProviders: boolean, breakLease: boolean): Promise<RecoveryReport> {
  const { options, specs } = planned.part;
  const lease = store ? await acquireRunLease(store, options.stack, breakLease ? { breakLive: true } : {}) : undefined;
  try {
    const prepared = await openStack(options, []);
    let taken: TakeoverReport | undefined;
    let adopt: string[];
    try {
      const common = {
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
        ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
        ...(lease ? { signal: lease.signal } : {}),
      };
      if (lease) {
        // Marked before anything is written (the state's import included): every engine session of this run, from
        // here on, carries its epoch, which the fence on a PostgreSQL backend's table checks at each write.
        markRun(prepared.stack, lease);
        // A live holder's lock, or another host's not proven dead, is left alone: nothing is touched.
        for (const lock of await lease.store.pulumiLocks()) {
          const { verdict } = classifyLockHolder(lock, HERE, lease.current.unfinished);
          if (verdict === "gone" || verdict === "fenced") continue;
          const holder = { file: lock.key, pid: lock.pid, hostname: lock.hostname, ...(lock.timestamp !== undefined ? { timestamp: lock.timestamp } : {}) };
          throw new LiveLockError(
            options.stack,
            holder,
            verdict === "live" ? "that process is still running" : "it was taken on another host, and no run of ours known to be dead held the stack's run lease there then",
          );
        }
      }
      if (rewriteProviders) await rewriteProviderCode(prepared.stack, options, lease);
      // The refresh and the up below load provider code from the state: only ours may run.
      const state = await exportState(prepared.stack);
      assertOwnProviderCode(state, options.stack);
      if (lease) {
        taken = await takeOver({ lease, stack: prepared.stack, stackName: options.stack, backendUrl: prepared.backendUrl, adopt: false, always: true, intents: options, ...common });
        // The pending creates, and a fleet's record-first sign-ups not yet in the state (the record's `created` entries the
        // takeover found proven under the stack's secret: it dropped every other one, saying so).
        adopt = [...new Set([...lease.current.adopt, ...(lease.current.created ?? [])].map((entry) => entry.resourceName))];
      } else {
        // A backend with no adapter of ours (Pulumi Cloud, a URL no adapter takes): no lock files of ours to judge, and
        // no record either: an interrupted recovery there forgets the list (run it again with adoptExisting).
        taken = { removedLocks: [], repairedFiles: [], pending: pendingOf(state.deployment), adopted: [], notAdopted: [], killedProcesses: 0 };
        adopt = pendingCreatesOf(state.deployment).map((entry) => entry.resourceName);
      }
      await engineRun("refresh", options.stack, () => runOnly(prepared.stack).refresh({ clearPendingCreates: true, ...common }));
    } catch (error) {
      throw runError(lease?.lost ? lease.signal.reason : error, options);
    } finally {
      prepared.release();
    }
    const toAdopt = new Set(adopt);
    const groups: GroupSpec[] = specs.map((spec) => (toAdopt.has(resourceNameOf(spec)) ? { ...spec, adoptExisting: true } : spec));
    // The shard's run pipeline (shards/run-shard.ts), under the lease held here: the directory's rule, the delete guard.
    const up = await runPlanned("up", planned, { lease, specs: groups });
    const declared = new Set(specs.map(resourceNameOf));
    // Dealt with: the pending creates, and the created entries this up declared (adopted); an undeclared created entry stays
    // for the fleet's next holder to adopt (its caller holds its token), and is named below.
    await lease?.updateWith((record) => ({ adopt: [], created: (record.created ?? []).filter((entry) => !declared.has(entry.resourceName)) }));
    return {
      removedLocks: taken?.removedLocks.map((lock) => lock.key) ?? [],
      repairedFiles: taken?.repairedFiles ?? [],
      pending: taken?.pending ?? [],
      adopted: adopt.filter((name) => declared.has(name)),
      undeclaredPendingCreates: adopt.filter((name) => !declared.has(name)),
      up,
    };
  } finally {
    await lease?.release();
  }
}

/**
 * Writes this package's provider text back into the state's groups
 * (`--rewrite-providers`): from the state as the backend holds it (secrets stay
 * ciphertext), through a private file (state-document.ts). Under a run lease the
 * lease is confirmed (renewed: its epoch still the current one) right before the
 * write, and the write itself is fenced by the epoch the run is marked with: a
 * recovery that lost the stack to another run writes nothing (RunLeaseLostError).
 */
async function rewriteProviderCode(stack: Stack, options: RunOptions, lease: RunLease | undefined): Promise<void> {
  const { deployment, rewritten } = withOwnProviderCode(await exportState(stack));
  if (rewritten === 0) return;
  try {
    await importState(stack, deployment, lease ? { beforeWrite: () => confirmLease(lease) } : {});
  } catch (error) {
    // Refused by the fence on the backend's table? Then the lease says so too (renewing it fails): the lost lease is what is told.
    if (lease && !lease.lost) await lease.update({}).catch(() => undefined);
    throw lease?.lost ? lease.signal.reason : error;
  }
  options.onOutput?.(`Wrote this package's provider text back into ${rewritten} place${rewritten === 1 ? "" : "s"} of stack ${JSON.stringify(options.stack)}'s state.\n`);
}

/** Renews the lease (a write of its record under its epoch): throws its loss when another run holds the stack now. */
async function confirmLease(lease: RunLease): Promise<void> {
  await lease.update({});
  if (lease.lost) throw lease.signal.reason;
}
