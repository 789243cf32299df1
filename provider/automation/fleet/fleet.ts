// UserGroupFleet: provisioning on demand from a service (CONTRACT "Fleet API").
// The stack is the fleet's only record: each call names the groups it wants
// (F1 additive), groups already held as asked cost no engine run (F2), calls
// close together share one targeted engine run (F3), a stack another process
// holds is waited for (F4), and every caller gets its own group's outcome (F5).
// This file is the batcher: the queue, its batches, and their answers; a
// shard's share of a batch runs in shard-batch.ts, through the one shard
// pipeline (shards/run-shard.ts) the whole-set operations use too.
import { systemClock } from "../../clock";
import { type GroupSpec, validateGroups, resourceNameOf, type EnsuredGroup, type GroupResult, type RunOptions } from "../model";
import { outsideRuns, readStateWithSecrets, runError } from "../engine";
import { eachLimited, recordUnlisted, shardConcurrency } from "../shards";
import { inSpan, setSpanAttributes } from "../telemetry";
import { type FleetGroup, groupsInState } from "./fleet-state";
import { FleetClosedError, FleetEnsureError } from "./errors";
import { type Waiter, type Request, resultOf, specOf, takeBatch } from "./requests";
import { type CallTrace, endCall, inBatch, startCall } from "./call-trace";
import { FleetShards } from "./fleet-shards";
import { Answers } from "./answers";
import { type BatchHost, runShardBatch } from "./shard-batch";
import { engineShardRunner, type ShardRunner } from "./shard-runner";
import { engineSignUpSeam, peekRecord, recordedElsewhere, type SignUpSeam, SignUps } from "./sign-ups";

export type { FleetGroup } from "./fleet-state";

export interface FleetOptions extends RunOptions {
  /** How long a run waits for a stack another run holds, in ms (default 120000; the whole-set functions default to 0). */
  readonly lockTimeoutMs?: number;
  /** How long the first call of a batch waits for others to join it, in ms (default 25). */
  readonly batchWindowMs?: number;
}

export class UserGroupFleet {
  private readonly lockTimeoutMs: number;
  private readonly batchWindowMs: number;
  private readonly queue: Request[] = [];
  private readonly fleetShards: FleetShards;
  private readonly answers: Answers;
  /** The fleet's way to a shard's state and runs: the engine's, unless a test gave another. */
  private readonly runner: ShardRunner;
  /** The batch window under way (aborted by close, which drains at once). */
  private window: AbortController | undefined;
  private draining: Promise<void> | undefined;
  private closed = false;
  /** Requests the record-first sign-ups sent back: asked again on today's path. */
  private readonly slowOnly = new WeakSet<Request>();
  /** Requests handed to the record-first sign-ups: they answer them. */
  private readonly handedOver = new WeakSet<Request>();
  /** Each waiting call's trace. */
  private readonly calls = new WeakMap<Request, CallTrace>();
  /** Engine runs this fleet started (batches that needed one), for callers who measure. */
  engineRuns = 0;
  /** @internal The record-first sign-ups (sign-ups.ts), when this fleet was made with them (fastPathFleet). */
  readonly signUps: SignUps | undefined;

  constructor(options: FleetOptions);
  /** @internal `runner`: the seam a unit test runs the fleet through without an engine (shard-runner.ts). */
  constructor(options: FleetOptions, runner: ShardRunner | undefined);
  /**
   * @internal `signUps`: record-first sign-ups through this seam ("engine": the real one, fastPathFleet; a function: around
   * the real one; "none", the default: every ensure by an engine run, slowPathFleet).
   */
  constructor(options: FleetOptions, runner: ShardRunner | undefined, signUps: SignUpSeam | "engine" | "none" | ((engine: SignUpSeam) => SignUpSeam));
  constructor(
    private readonly options: FleetOptions,
    runner?: ShardRunner,
    signUps?: SignUpSeam | "engine" | "none" | ((engine: SignUpSeam) => SignUpSeam),
  ) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? 120_000;
    this.batchWindowMs = options.batchWindowMs ?? 25;
    if (!Number.isFinite(this.lockTimeoutMs) || this.lockTimeoutMs < 0) throw new RangeError("lockTimeoutMs must be a number >= 0");
    if (!Number.isFinite(this.batchWindowMs) || this.batchWindowMs < 0) throw new RangeError("batchWindowMs must be a number >= 0");
    this.runner = runner ?? engineShardRunner(options, this.lockTimeoutMs);
    this.fleetShards = new FleetShards(options, this.runner.rootHeld);
    this.answers = new Answers(options, this.fleetShards, (request) => this.queue.push(request));
    // The record-first sign-up (issue #44) is not the default yet: PostgreSQL's fault history on it failed a caller with a
    // state read killed as a lost run's process (docs/fleet-replicas.md, "Not yet").
    signUps ??= "none";
    if (signUps === "none") this.signUps = undefined;
    else if (signUps === "engine" || typeof signUps === "function") {
      const engine = engineSignUpSeam(options, this.lockTimeoutMs, this.fleetShards);
      this.signUps = new SignUps(signUps === "engine" ? engine : signUps(engine));
    } else this.signUps = new SignUps(signUps);
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
      const sharded = await this.fleetShards.sharded();
      const known = await sharded.directory.read();
      const answeredHere = this.signUps?.listed() ?? [];
      const here = new Set(answeredHere.map((group) => group.resourceName));
      const held = await eachLimited(await sharded.allShards(), shardConcurrency(), async (shard) => {
        const opened = await this.fleetShards.open(shard);
        // Read on every fleet (a replica on the engine-run path sees a record-first replica's groups too).
        const record = await peekRecord(opened.store);
        const state = await readStateWithSecrets(opened.stack);
        const groups = groupsInState(state);
        // A group a state holds without an entry (a directory an older version left out of step) gets one (shards/directory-rule.ts).
        await recordUnlisted(sharded.directory, shard, groups.map((group) => group.resourceName), known);
        // Groups another replica answered and has not adopted yet (its record's proven created entries): seen at once.
        const inState = new Set([...groups.map((group) => group.resourceName), ...here]);
        const elsewhere = await recordedElsewhere(this.options, { stack: opened.stack, stackName: this.fleetShards.stackNameOf(shard), state }, record, inState);
        return [...groups, ...elsewhere];
      });
      // Groups this fleet answered and has not adopted yet (record-first sign-ups): seen at once.
      const inStates = new Set(held.flat().map((group) => group.resourceName));
      const answered = answeredHere.filter((group) => !inStates.has(group.resourceName));
      return [...held.flat(), ...answered].sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
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
    if (this.window) {
      this.window.abort();
      this.window = undefined;
      this.draining ??= this.drain();
    }
    // Record-first sign-ups adopted into the state and their leases let go (what they sent back asked again), before the shards close.
    do {
      while (this.draining) await this.draining;
      await this.signUps?.closeAll();
    } while (this.draining !== undefined || this.queue.length > 0);
    await this.fleetShards.close();
  }

  private ensureValid(spec: GroupSpec): Promise<EnsuredGroup> {
    return this.enqueue("ensure", spec.userGroupId, (waiter) => ({ kind: "ensure", resourceName: resourceNameOf(spec), spec, waiter }));
  }

  private enqueue<T extends GroupResult>(operation: CallTrace["operation"], userGroupId: string, make: (waiter: Waiter<T>) => Request): Promise<T> {
    if (this.closed) return Promise.reject(new FleetClosedError());
    const call = startCall(operation, this.options.stack, userGroupId);
    return new Promise<T>((resolve, reject) => {
      const request = make({
        resolve: (value) => {
          endCall(call, value.change, undefined);
          resolve(value);
        },
        reject: (error) => {
          endCall(call, undefined, error);
          reject(error);
        },
      });
      this.calls.set(request, call);
      this.queue.push(request);
      // Calls made while a run is under way join the next batch when it ends; the
      // first call of an idle fleet waits the window for company (on the clock).
      if (this.draining === undefined && this.window === undefined) {
        const window = new AbortController();
        this.window = window;
        systemClock.sleep(this.batchWindowMs, window.signal).then(
          () => {
            this.window = undefined;
            this.draining = this.drain();
          },
          () => {}, // closed meanwhile: close drains at once
        );
      }
    });
  }

  /** Requests the sign-ups sent back (refused, failed, no lease): queued again for today's path, a drain started if none runs. */
  private askSlow(requests: readonly Request[]): void {
    for (const request of requests) {
      this.handedOver.delete(request);
      this.slowOnly.add(request);
      this.queue.push(request);
    }
    // Called from a sign-up session (under its lease): the batches it starts are not that run's (no run id on their reads).
    if (requests.length > 0 && this.draining === undefined && this.window === undefined) this.draining = outsideRuns(() => this.drain());
  }

  private async drain(): Promise<void> {
    const host: BatchHost = {
      shards: this.fleetShards,
      runner: this.runner,
      countRun: () => {
        this.engineRuns += 1;
      },
      settle: (batch, name, outcome) => this.answers.settle(batch, name, outcome),
      ...(this.signUps ? { signUps: this.signUps, slowOnly: this.slowOnly, handedOver: this.handedOver, askSlow: (requests: readonly Request[]) => this.askSlow(requests) } : {}),
    };
    try {
      while (this.queue.length > 0) {
        const batch = takeBatch(this.queue);
        try {
          await inBatch(this.options.stack, batch, (request) => this.calls.get(request), () => this.runBatch(host, batch));
        } catch (error) {
          // Whatever failed the whole batch fails each of its callers that is still waiting (in our vocabulary, scrubbed per caller).
          const failure = runError(error, this.options);
          for (const request of batch) if (!this.handedOver.has(request)) this.answers.reject(request, failure, batch);
        }
      }
    } finally {
      this.draining = undefined;
    }
  }

  /**
   * One batch (all ensures, or all removes): its requests by shard (an ensure's
   * new group gets its shard now, before any run may create it; a remove of a
   * group no shard holds is answered "same"), each shard's share a few at a time.
   */
  private async runBatch(host: BatchHost, batch: readonly Request[]): Promise<void> {
    const ensures = batch[0]!.kind === "ensure";
    const grouped = await this.fleetShards.byShard(batch, ensures, (request, shard) => {
      const call = this.calls.get(request);
      if (call) setSpanAttributes(call.span, () => ({ "user_groups.shard": shard }));
    });
    const inShards = new Set([...grouped.values()].flat());
    for (const request of batch) {
      if (request.kind === "remove" && !inShards.has(request)) {
        request.waiter.resolve(resultOf(specOf(request), "same"));
      }
    }
    await eachLimited([...grouped], shardConcurrency(), ([shard, requests]) => runShardBatch(host, shard, requests));
  }
}

/**
 * @internal A fleet that answers a new group's ensure before its engine run
 * (record-first sign-ups, docs/fleet-replicas.md): not the default yet, and no
 * public option (the benches and tests make one here).
 */
export function fastPathFleet(options: FleetOptions): UserGroupFleet {
  return new UserGroupFleet(options, undefined, "engine");
}

/**
 * @internal A fleet whose every ensure is an engine run (the default, and the
 * fallback of a sign-up the record-first path cannot serve): the bench's
 * "today's ensure" for comparison. A sign-up's lease excludes this path's runs,
 * and list() on either path reads the records, so replicas may mix the paths.
 */
export function slowPathFleet(options: FleetOptions): UserGroupFleet {
  return new UserGroupFleet(options, undefined, "none");
}
