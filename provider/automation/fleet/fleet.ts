// UserGroupFleet: provisioning on demand from a service (CONTRACT "Fleet API").
// The stack is the fleet's only record: each call names the groups it wants
// (F1 additive), groups already held as asked cost no engine run (F2), calls
// close together share one targeted engine run (F3), a stack another process
// holds is waited for (F4), and every caller gets its own group's outcome (F5).
import type { Stack } from "@pulumi/pulumi/automation";
import { type Context, context, type Link, type Span, trace } from "@opentelemetry/api";
import * as pulumi from "@pulumi/pulumi";
import { type FleetGroup, groupsInState } from "./fleet-state";
import { type GroupSpec, validateGroups, resourceNameOf, type EnsuredGroup, type GroupChange, type GroupResult, type Operation, type RunOptions } from "../model";
import { type GroupOutcome, othersScrubber, type RunAttempt, type RunFailure, scrubbedCopy, settleEach } from "./fleet-isolation";
import { assertWithinBatch, ChangeTracker, checkedState, declareGroup, engineRun, readStateWithSecrets, runError, type SelectedStack, selectStack, withLockWait, scrubText, secretValuesOf, underRunLease, PROJECT_NAME } from "../engine";
import { openShards, shardStackName, eachLimited, shardConcurrency, type ShardedStack } from "../shards";
import { automationInstruments, automationTracer, errorTypeOf, failSpan, inSpan, type LeaseStore, leaseStoreFor, setSpanAttributes } from "../lease";
import { UserGroupsError } from "../../wire/errors";
import { backendNotice } from "../backend";
import { FleetClosedError, FleetEnsureError, groupError, unsettledError } from "./errors";
import { Waiter, Request, GroupOutputs, urnOfGroup, holdsAsAsked, resultOf, mergeChanges, takeBatch } from "./requests";
import { FLEET_MARKER_OUTPUT } from "./fleet-stack";

export type { FleetGroup } from "./fleet-state";

/** How often one ensure follows its group to another shard before it fails (retryable). */
const MAX_MOVES = 3;

/** A group found in another shard's directory entry under this shard's lease: its requests go round again. */
class GroupMoved extends UserGroupsError {
  constructor() {
    super("group_moved", "The group is in another shard's directory entry: its call goes round again.");
    this.name = "GroupMoved";
  }
}

export interface FleetOptions extends RunOptions {
  /** How long a run waits for a stack another run holds, in ms (default 120000; the whole-set functions default to 0). */
  readonly lockTimeoutMs?: number;
  /** How long the first call of a batch waits for others to join it, in ms (default 25). */
  readonly batchWindowMs?: number;
}

/**
 * One call's trace (docs/observability.md, "What is traced"): its span, started when
 * the call is made, as a child of the caller's active span (a service's HTTP
 * handler), and ended when the call is answered; the context it was made in, which
 * parents its batch's span when it is the batch's first call.
 */
interface CallTrace {
  readonly operation: "ensure" | "remove";
  readonly span: Span;
  readonly parent: Context;
  readonly enqueued: number;
  queuedMs?: number;
  ended?: boolean;
}

interface RunOutcome {
  readonly tracker: ChangeTracker;
  /** Set when the run failed for a reason of its own (engine diagnostics in the tracker): its groups may each be fine alone. */
  readonly failure?: RunFailure;
}

export class UserGroupFleet {
  private readonly lockTimeoutMs: number;
  private readonly batchWindowMs: number;
  private readonly queue: Request[] = [];
  /** The stack's shards (shard-directory.ts), opened with the first call. */
  private shardsHandle: Promise<ShardedStack> | undefined;
  /** Each shard's Pulumi stack, selected once per fleet. */
  private readonly stackHandles = new Map<number, Promise<SelectedStack>>();
  /** Each shard's run lease store (undefined: a backend without one), made with its stack. */
  private readonly leaseStores = new Map<number, LeaseStore | undefined>();
  /** The backend notice (backend/login-backend.ts) is given once per fleet. */
  private backendNoticed = false;
  /** The shard of each group this fleet has asked for (to name its URN in a scrubbed error). */
  private readonly shardOf = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private closed = false;
  /** How often each waiting ensure was sent to another shard (a concurrent run moved its group). */
  private readonly moves = new WeakMap<Request, number>();
  /** Each waiting call's trace. */
  private readonly calls = new WeakMap<Request, CallTrace>();
  /** Engine runs this fleet started (batches that needed one), for callers who measure. */
  engineRuns = 0;

  constructor(private readonly options: FleetOptions) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? 120_000;
    this.batchWindowMs = options.batchWindowMs ?? 25;
    if (!Number.isFinite(this.lockTimeoutMs) || this.lockTimeoutMs < 0) throw new RangeError("lockTimeoutMs must be a number >= 0");
    if (!Number.isFinite(this.batchWindowMs) || this.batchWindowMs < 0) throw new RangeError("batchWindowMs must be a number >= 0");
  }

  /**
   * Makes sure the group exists as specified; resolves with its token (yours to keep
   * secret) and what changed. The spec is checked at run time too (for JavaScript
   * callers): an invalid one rejects with GroupsValidationError before any run.
   */
  async ensure(spec: GroupSpec): Promise<EnsuredGroup> {
    return this.ensureValid(validateGroups([spec])[0]!);
  }

  /** ensure for several groups at once; results in the same order. Invalid entries fail the call before any run. */
  async ensureMany(specs: readonly GroupSpec[]): Promise<EnsuredGroup[]> {
    const valid = validateGroups(specs);
    const outcomes = await Promise.allSettled(valid.map((spec) => this.ensureValid(spec)));
    if (outcomes.every((o) => o.status === "fulfilled")) return outcomes.map((o) => (o as PromiseFulfilledResult<EnsuredGroup>).value);
    throw new FleetEnsureError(outcomes);
  }

  /** Deletes one group of the fleet (change "delete"), or does nothing when the stack does not hold it (change "same"). */
  async remove(userGroupId: string, options: { profile?: string | undefined } = {}): Promise<GroupResult> {
    // The same rules as a spec's fields, so that a name never reaches the engine unchecked.
    const [checked] = validateGroups([{ name: "-", userGroupId, ...(options.profile !== undefined ? { profile: options.profile } : {}) }]);
    return this.enqueue("remove", checked!.userGroupId, (waiter) => ({
      kind: "remove",
      resourceName: resourceNameOf(checked!),
      userGroupId: checked!.userGroupId,
      ...(checked!.profile !== undefined ? { profile: checked!.profile } : {}),
      waiter,
    }));
  }

  /** The groups the stack holds now, read from the state (no API request, no engine run). Tokens included. */
  async list(): Promise<FleetGroup[]> {
    if (this.closed) throw new FleetClosedError();
    return inSpan("user_groups.fleet.list", { "user_groups.operation": "list", "user_groups.stack": this.options.stack }, async (span) => {
      const groups = await this.listTraced();
      setSpanAttributes(span, () => ({ "user_groups.group_count": groups.length }));
      return groups;
    });
  }

  private async listTraced(): Promise<FleetGroup[]> {
    try {
      // Every shard that may hold a group (the directory's, and any whose stack the backend holds): the states say what is held.
      const sharded = await this.shards();
      const known = await sharded.directory.read();
      const held = await eachLimited(await sharded.allShards(), shardConcurrency(), async (shard) => {
        const groups = groupsInState(await readStateWithSecrets(await this.stack(shard)));
        // A group a state holds without an entry (a directory an older version left out of step) gets one: written only
        // where there is none, which is safe without the shard's lease (at worst a stale entry, which sends a run here).
        const missing = groups.map((group) => group.resourceName).filter((name) => !known.has(name));
        if (missing.length > 0) await sharded.directory.claim(missing, shard);
        return groups;
      });
      return held.flat().sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
    } catch (error) {
      // In our vocabulary, as every other call's errors: a state read the backend refused is backend_unreachable, not Pulumi's bare "code: -2".
      throw runError(error, this.options);
    }
  }

  /**
   * Drains: refuses new calls (FleetClosedError) and waits for every call made
   * before (they finish as usual), then removes the fleet's run directory and
   * lets go of the backend connection.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.draining ??= this.drain();
    }
    while (this.draining) await this.draining;
    const handles = [...this.stackHandles.values()];
    this.stackHandles.clear();
    for (const handle of handles) await handle.then((selected) => selected.dispose(), () => {});
    for (const store of this.leaseStores.values()) await store?.close();
    this.leaseStores.clear();
    const shards = this.shardsHandle;
    this.shardsHandle = undefined;
    await shards?.then((opened) => opened.close(), () => {});
  }

  private ensureValid(spec: GroupSpec): Promise<EnsuredGroup> {
    return this.enqueue("ensure", spec.userGroupId, (waiter) => ({ kind: "ensure", resourceName: resourceNameOf(spec), spec, waiter }));
  }

  private enqueue<T extends GroupResult>(operation: CallTrace["operation"], userGroupId: string, make: (waiter: Waiter<T>) => Request): Promise<T> {
    if (this.closed) return Promise.reject(new FleetClosedError());
    // The call's span, a child of the caller's active span, captured now: the call is run later, in a batch.
    const parent = context.active();
    const span = automationTracer.startSpan(`user_groups.fleet.${operation}`, {}, parent);
    setSpanAttributes(span, () => ({ "user_groups.operation": operation, "user_groups.stack": this.options.stack, "user_groups.user_group_id": userGroupId }));
    const call: CallTrace = { operation, span, parent, enqueued: performance.now() };
    return new Promise<T>((resolve, reject) => {
      const request = make({
        resolve: (value) => {
          this.callEnded(call, value.change, undefined);
          resolve(value);
        },
        reject: (error) => {
          this.callEnded(call, undefined, error);
          reject(error);
        },
      });
      this.calls.set(request, call);
      this.queue.push(request);
      // Calls made while a run is under way join the next batch when it ends; the
      // first call of an idle fleet waits the window for company.
      if (this.draining === undefined && this.timer === undefined) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.draining = this.drain();
        }, this.batchWindowMs);
      }
    });
  }

  /** A call answered: its span ended (outcome, or failure) and its duration measured. */
  private callEnded(call: CallTrace, change: string | undefined, error: unknown): void {
    if (call.ended) return;
    call.ended = true;
    const type = error === undefined ? undefined : failSpan(call.span, error);
    setSpanAttributes(call.span, () => ({ "user_groups.outcome": change ?? "error" }));
    call.span.end();
    automationInstruments()?.ensureDuration.record((performance.now() - call.enqueued) / 1000, {
      "user_groups.operation": call.operation,
      "user_groups.outcome": change ?? "error",
      ...(type !== undefined ? { "error.type": type } : {}),
    });
  }

  /**
   * Runs one batch in its span `user_groups.fleet.batch`. Its parent is the span of
   * the batch's first call (so a lone sign-up's trace reads handler → ensure → batch →
   * lease wait, engine run → provider → HTTP); every other call of the batch is
   * linked from the batch's span and links to it. Each call's span gets the time it
   * was queued and the batch's size.
   */
  private inBatch(batch: readonly Request[], work: () => Promise<void>): Promise<void> {
    const calls = batch.map((request) => this.calls.get(request)).filter((call): call is CallTrace => call !== undefined);
    const now = performance.now();
    const measure = automationInstruments();
    const operation = batch[0]!.kind;
    measure?.batchSize.record(batch.length, { "user_groups.operation": operation });
    for (const call of calls) {
      if (call.queuedMs === undefined) {
        call.queuedMs = now - call.enqueued;
        measure?.queued.record(call.queuedMs / 1000, { "user_groups.operation": operation });
      }
      setSpanAttributes(call.span, () => ({ "user_groups.queued_ms": call.queuedMs, "user_groups.batch.size": batch.length }));
    }
    const first = calls[0];
    const parent = first !== undefined ? trace.setSpan(first.parent, first.span) : context.active();
    const links: Link[] = calls.slice(1).filter((call) => call.span.isRecording()).map((call) => ({ context: call.span.spanContext() }));
    return inSpan(
      "user_groups.fleet.batch",
      { "user_groups.operation": operation, "user_groups.stack": this.options.stack, "user_groups.batch.size": batch.length },
      async (span) => {
        if (span.isRecording()) for (const call of calls.slice(1)) call.span.addLink({ context: span.spanContext() });
        await work();
      },
      { parent, links },
    );
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = takeBatch(this.queue);
        try {
          await this.inBatch(batch, async () => {
            if (batch[0]!.kind === "ensure") await this.runEnsures(batch as Extract<Request, { kind: "ensure" }>[]);
            else await this.runRemoves(batch as Extract<Request, { kind: "remove" }>[]);
          });
        } catch (error) {
          // Whatever failed the whole batch fails each of its callers that is still waiting (in our vocabulary, scrubbed per caller).
          const failure = runError(error, this.options);
          for (const request of batch) this.reject(request, failure, batch);
        }
      }
    } finally {
      this.draining = undefined;
    }
  }

  private shards(): Promise<ShardedStack> {
    if (this.shardsHandle === undefined) {
      const handle = openShards(this.options);
      this.shardsHandle = handle;
      handle.catch(() => {
        if (this.shardsHandle === handle) this.shardsHandle = undefined; // let a later call try again
      });
    }
    return this.shardsHandle;
  }

  private stackNameOf(shard: number): string {
    return shardStackName(this.options.stack, shard);
  }

  private stack(shard: number): Promise<Stack> {
    return this.selected(shard).then(({ stack }) => stack);
  }

  /** Stacks kept elsewhere than where `pulumi` would look (PULUMI_BACKEND_URL, else `pulumi login`'s backend): a process warning, once. */
  private noticeBackend(backendUrl: string): void {
    if (this.backendNoticed) return;
    this.backendNoticed = true;
    const notice = backendNotice(backendUrl, { ...process.env, ...this.options.envVars }, "fleet");
    if (notice !== undefined) process.emitWarning(`UserGroupFleet: ${notice}`, { type: "UserGroupsWarning", code: "USER_GROUPS_BACKEND_ELSEWHERE" });
  }

  private selected(shard: number): Promise<SelectedStack> {
    let handle = this.stackHandles.get(shard);
    if (handle === undefined) {
      const options = { ...this.options, stack: this.stackNameOf(shard) };
      // Selected once per fleet (replicas racing to create it are handled there); each run brings its own program.
      const selecting = selectStack(options, async () => ({})).then((selected) => {
        if (!this.leaseStores.has(shard)) this.leaseStores.set(shard, leaseStoreFor(selected.backendUrl, PROJECT_NAME, options.stack));
        this.noticeBackend(selected.backendUrl);
        return selected;
      });
      handle = selecting;
      this.stackHandles.set(shard, selecting);
      selecting.catch(() => {
        if (this.stackHandles.get(shard) === selecting) this.stackHandles.delete(shard); // let a later call try again
      });
    }
    return handle;
  }

  /** The batch's requests by the shard of their group (new groups get theirs now, before any run may create them). */
  private byShard<R extends Request>(batch: readonly R[], assign: boolean): Promise<Map<number, R[]>> {
    return inSpan("user_groups.shards.plan", { "user_groups.operation": batch[0]?.kind, "user_groups.stack": this.options.stack, "user_groups.group_count": batch.length }, async (span) => {
      const grouped = await this.byShardTraced(batch, assign);
      setSpanAttributes(span, () => ({ "user_groups.shard_count": grouped.size }));
      return grouped;
    });
  }

  private async byShardTraced<R extends Request>(batch: readonly R[], assign: boolean): Promise<Map<number, R[]>> {
    const shards = await this.shards();
    const names = [...new Set(batch.map((request) => request.resourceName))];
    const known = assign ? await shards.directory.assign(names, shards.shardSize) : await shards.directory.read();
    const grouped = new Map<number, R[]>();
    for (const request of batch) {
      const shard = known.get(request.resourceName);
      if (shard === undefined) continue; // a remove of a group no shard holds
      this.shardOf.set(request.resourceName, shard);
      const call = this.calls.get(request);
      if (call) setSpanAttributes(call.span, () => ({ "user_groups.shard": shard }));
      grouped.set(shard, [...(grouped.get(shard) ?? []), request]);
    }
    return grouped;
  }

  private async runEnsures(batch: Extract<Request, { kind: "ensure" }>[]): Promise<void> {
    const grouped = await this.byShard(batch, true);
    await eachLimited([...grouped], shardConcurrency(), ([shard, requests]) => this.runEnsuresIn(shard, requests));
  }

  private async runEnsuresIn(shard: number, batch: Extract<Request, { kind: "ensure" }>[]): Promise<void> {
    const { directory } = await this.shards();
    const stack = await this.stack(shard);
    const held = new Map(groupsInState(checkedState(await readStateWithSecrets(stack), this.stackNameOf(shard))).map((group) => [group.resourceName, group]));
    const toRun = new Map<string, GroupSpec>();
    for (const request of batch) {
      const group = held.get(request.resourceName);
      if (group && holdsAsAsked(group, request.spec)) request.waiter.resolve(resultOf(request.spec, "same", group));
      else toRun.set(request.resourceName, request.spec);
    }
    if (toRun.size === 0) return;

    const changes = new Map<string, GroupChange>();
    await settleEach(
      [...toRun.keys()],
      async (names): Promise<RunAttempt<EnsuredGroup>> => {
        const specs = new Map(names.map((name) => [name, toRun.get(name)!]));
        const outputs = new Map<string, GroupOutputs>();
        const moved = new Map<string, number>();
        const outcome = await this.runEngine("up", shard, specs, async (tracker, signal) => {
          outputs.clear();
          moved.clear();
          // Under the shard's run lease: only groups the directory names this shard for may be created here (directory.ts, the rule).
          for (const [name, other] of await directory.claim(names, shard)) moved.set(name, other);
          const claimed = new Map([...specs].filter(([name]) => !moved.has(name)));
          if (claimed.size === 0) return;
          await engineRun("up", this.stackNameOf(shard), () => stack.up({
            program: async () => {
              for (const [resourceName, spec] of claimed) {
                const group = declareGroup(spec);
                pulumi.all([group.name, group.token, group.teamId, group.apiEnvironmentTag]).apply(([name, token, teamId, apiEnvironmentTag]) => {
                  outputs.set(resourceName, { name, token, teamId, ...(apiEnvironmentTag !== undefined ? { apiEnvironmentTag } : {}) });
                });
              }
              return { [FLEET_MARKER_OUTPUT]: true };
            },
            ...this.targetedRun(shard, claimed, tracker, signal),
          }), shard);
        });
        mergeChanges(changes, outcome.tracker.changes);
        const settled = new Map<string, GroupOutcome<EnsuredGroup>>();
        for (const name of moved.keys()) settled.set(name, { ok: false, error: new GroupMoved() });
        for (const [name, spec] of specs) {
          if (moved.has(name)) continue;
          const got = outputs.get(name);
          const change = outcome.tracker.changes.get(name);
          const diagnostic = outcome.tracker.diagnostics.get(name);
          if (got && change !== "failed") settled.set(name, { ok: true, value: resultOf(spec, changes.get(name) ?? "same", got) });
          else if (change === "failed" || diagnostic !== undefined) settled.set(name, { ok: false, error: groupError(name, spec, diagnostic, outcome.failure?.error) });
        }
        return { settled, ...(outcome.failure ? { failure: outcome.failure } : {}) };
      },
      {
        unsettledError,
        onSettled: (name, outcome) => {
          if (!outcome.ok && outcome.error instanceof GroupMoved) this.requeue(batch, name);
          else this.settleRequests(batch, name, outcome);
        },
      },
    );
  }

  /**
   * The batch's requests for a group that a concurrent run put in another shard
   * while this batch waited for its shard: asked again, from the directory as it is now.
   */
  private requeue(batch: readonly Extract<Request, { kind: "ensure" }>[], resourceName: string): void {
    for (const request of batch) {
      if (request.resourceName !== resourceName) continue;
      const moves = (this.moves.get(request) ?? 0) + 1;
      this.moves.set(request, moves);
      if (moves > MAX_MOVES) this.reject(request, new UserGroupsError("shard_directory_conflict", `User group "${resourceName}" kept moving between shards while this call waited (concurrent removes and ensures of it): ask again.`), batch);
      else this.queue.push(request);
    }
  }

  private async runRemoves(batch: Extract<Request, { kind: "remove" }>[]): Promise<void> {
    const grouped = await this.byShard(batch, false);
    const inShards = new Set([...grouped.values()].flat());
    for (const request of batch) {
      if (!inShards.has(request)) {
        const spec = { name: "-", userGroupId: request.userGroupId, ...(request.profile !== undefined ? { profile: request.profile } : {}) };
        request.waiter.resolve(resultOf(spec, "same"));
      }
    }
    await eachLimited([...grouped], shardConcurrency(), ([shard, requests]) => this.runRemovesIn(shard, requests));
  }

  /** Runs the removes of one shard; answers the groups it deleted. */
  private async runRemovesIn(shard: number, batch: Extract<Request, { kind: "remove" }>[]): Promise<string[]> {
    const { directory } = await this.shards();
    const stack = await this.stack(shard);
    const held = new Set(groupsInState(checkedState(await readStateWithSecrets(stack), this.stackNameOf(shard))).map((group) => group.resourceName));
    const toRemove = new Map<string, GroupSpec>();
    for (const request of batch) {
      const spec = { name: "-", userGroupId: request.userGroupId, ...(request.profile !== undefined ? { profile: request.profile } : {}) };
      if (!held.has(request.resourceName)) request.waiter.resolve(resultOf(spec, "same"));
      else toRemove.set(request.resourceName, spec);
    }
    const deleted: string[] = [];
    if (toRemove.size === 0) return deleted;
    await settleEach(
      [...toRemove.keys()],
      async (names): Promise<RunAttempt<GroupResult>> => {
        const specs = new Map(names.map((name) => [name, toRemove.get(name)!]));
        const goneMeanwhile: string[] = [];
        const outcome = await this.runEngine("destroy", shard, specs, async (tracker, signal) => {
          // Under the shard's run lease: a group another replica removed since the state was read above is gone
          // already ("same"), not a target the engine cannot find.
          const stillHeld = new Set(groupsInState(await readStateWithSecrets(stack)).map((group) => group.resourceName));
          for (const name of [...specs.keys()]) {
            if (stillHeld.has(name)) continue;
            specs.delete(name);
            goneMeanwhile.push(name);
          }
          if (specs.size === 0) return;
          try {
            await engineRun("destroy", this.stackNameOf(shard), () => stack.destroy(this.targetedRun(shard, specs, tracker, signal)), shard);
          } finally {
            // Still under the shard's run lease: entries are dropped only for groups its state, read again now, no longer holds.
            // A forget that failed leaves a stale entry, which only sends a later run here again.
            if (!signal?.aborted) {
              await readStateWithSecrets(stack)
                .then((deployment) => {
                  const still = new Set(groupsInState(deployment).map((group) => group.resourceName));
                  return directory.forget(names.filter((name) => !still.has(name)), shard);
                })
                .catch(() => undefined);
            }
          }
        });
        const settled = new Map<string, GroupOutcome<GroupResult>>();
        for (const name of goneMeanwhile) settled.set(name, { ok: true, value: resultOf(toRemove.get(name)!, "same") });
        for (const [name, spec] of specs) {
          const change = outcome.tracker.changes.get(name);
          const diagnostic = outcome.tracker.diagnostics.get(name);
          if (change === "delete") {
            deleted.push(name);
            settled.set(name, { ok: true, value: resultOf(spec, "delete") });
          }
          else if (change === "failed" || diagnostic !== undefined) settled.set(name, { ok: false, error: groupError(name, undefined, diagnostic, outcome.failure?.error) });
        }
        return { settled, ...(outcome.failure ? { failure: outcome.failure } : {}) };
      },
      { unsettledError, onSettled: (name, outcome) => this.settleRequests(batch, name, outcome) },
    );
    return deleted;
  }

  /** Settles the batch's requests for this group (one, or several asking the same). */
  private settleRequests<K extends Request["kind"]>(
    batch: readonly Extract<Request, { kind: K }>[],
    resourceName: string,
    outcome: GroupOutcome<Parameters<Extract<Request, { kind: K }>["waiter"]["resolve"]>[0]>,
  ): void {
    for (const request of batch) {
      if (request.resourceName !== resourceName) continue;
      if (outcome.ok) (request.waiter as Waiter<typeof outcome.value>).resolve(outcome.value);
      else this.reject(request, outcome.error, batch);
    }
  }

  /**
   * Rejects one caller with its own copy of the error, causes and captured
   * output included: no secret, and no other group of its batch (a service
   * may show the message to its customer).
   */
  private reject(request: Request, error: unknown, batch: readonly Request[]): void {
    const others = batch
      .filter((other) => other.resourceName !== request.resourceName)
      .map((other) => ({
        userGroupId: other.kind === "ensure" ? other.spec.userGroupId : other.userGroupId,
        resourceName: other.resourceName,
        urn: urnOfGroup(this.stackNameOf(this.shardOf.get(other.resourceName) ?? 0), other.resourceName),
      }));
    const secrets = secretValuesOf(this.options);
    const withoutOthers = othersScrubber(others);
    request.waiter.reject(scrubbedCopy(error, (text) => withoutOthers(scrubText(text, secrets))));
  }

  /** The options of an up or destroy of exactly these groups, each group's failure its own; a step outside them stops the run. */
  private targetedRun(shard: number, groups: ReadonlyMap<string, GroupSpec>, tracker: ChangeTracker, runSignal: AbortSignal | undefined) {
    return {
      target: [...groups.keys()].map((name) => urnOfGroup(this.stackNameOf(shard), name)),
      continueOnError: true,
      onEvent: tracker.handle,
      // Stopped by a step outside the batch, or by losing the run lease.
      signal: runSignal ? AbortSignal.any([tracker.signal, runSignal]) : tracker.signal,
      ...(this.options.onOutput ? { onOutput: this.options.onOutput } : {}),
      ...(this.options.parallel !== undefined ? { parallel: this.options.parallel } : {}),
    };
  }

  /**
   * One engine run of the batch's groups, waiting for the stack's lock. It holds
   * the stack's run lease, and first takes over what a dead replica left (F7:
   * its lock, its pending creates, adopted). A run that failed returns its
   * tracker (each group's own failures are in it) and, when the engine said
   * anything, the failure for isolation (fleet-isolation.ts). Our own errors (a
   * lock never freed, a lost lease, a run outside its batch) and a failure
   * before the engine said anything fail the whole batch.
   */
  private async runEngine(
    operation: Operation,
    shard: number,
    groups: ReadonlyMap<string, GroupSpec>,
    run: (tracker: ChangeTracker, signal: AbortSignal | undefined) => Promise<unknown>,
  ): Promise<RunOutcome> {
    const batch = new Set(groups.keys());
    const stackName = this.stackNameOf(shard);
    let tracker = new ChangeTracker(this.options.onEvent, { batch });
    this.engineRuns += 1;
    try {
      await withLockWait({ ...this.options, stack: stackName, lockTimeoutMs: this.lockTimeoutMs }, async () => {
        const { stack, backendUrl } = await this.selected(shard);
        return underRunLease(
          {
            stack,
            stackName,
            backendUrl,
            store: this.leaseStores.get(shard),
            adopt: true,
            outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
            ...(this.options.onOutput ? { onOutput: this.options.onOutput } : {}),
            ...(this.options.parallel !== undefined ? { parallel: this.options.parallel } : {}),
            ...(this.options.onTakeover ? { onTakeover: this.options.onTakeover } : {}),
          },
          async (signal) => {
            tracker = new ChangeTracker(this.options.onEvent, { batch });
            return run(tracker, signal);
          },
        );
      });
    } catch (error) {
      assertWithinBatch(tracker, operation, stackName);
      const engineSpoke = tracker.changes.size > 0 || tracker.diagnostics.size > 0 || tracker.runDiagnostics.length > 0;
      if (error instanceof UserGroupsError || !engineSpoke) throw error;
      return { tracker, failure: { error, lines: [...tracker.runDiagnostics] } };
    }
    assertWithinBatch(tracker, operation, stackName);
    return { tracker };
  }
}
