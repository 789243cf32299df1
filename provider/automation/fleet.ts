// UserGroupFleet: provisioning on demand from a service (CONTRACT "Fleet API").
// The stack is the fleet's only record: each call names the groups it wants
// (F1 additive), groups already held as asked cost no engine run (F2), calls
// close together share one targeted engine run (F3), a stack another process
// holds is waited for (F4), and every caller gets its own group's outcome (F5).
import type { EngineEvent, Stack } from "@pulumi/pulumi/automation";
import * as pulumi from "@pulumi/pulumi";
import { diffUserGroup } from "../logic/diff";
import { type CheckedInputs, normalizeInputs } from "../logic/inputs";
import { UserGroupExistsError } from "../logic/operations";
import { USER_GROUP_TYPE } from "../resource/user-group";
import type { Environment } from "../wire/schemas";
import { type FleetGroup, groupsInState } from "./fleet-state";
import { type GroupSpec, validateGroups } from "./groups-spec";
import { resourceNameOf, urnOf } from "./resource-name";
import { ChangeTracker, declareGroup, type GroupResult, type RunOptions, selectStack, StackNotFoundError, withLockWait } from "./provision";
import { type LeaseStore, leaseStoreFor } from "./run-lease";
import { scrubSecrets, secretValuesOf } from "./stack-config";
import { underRunLease } from "./takeover";
import { PROJECT_NAME } from "./workspace";
import { UserGroupsError } from "../wire/errors";

export type { FleetGroup } from "./fleet-state";

export interface FleetOptions extends RunOptions {
  /** How long a run waits for a stack another run holds, in ms (default 120000; the whole-set functions default to 0). */
  readonly lockTimeoutMs?: number;
  /** How long the first call of a batch waits for others to join it, in ms (default 25). */
  readonly batchWindowMs?: number;
}

/** The stack output that marks a fleet's stack (the GitOps CLI refuses whole-set runs on it). */
export const FLEET_MARKER_OUTPUT = "userGroupsFleet";

export class FleetClosedError extends UserGroupsError {
  constructor() {
    super("fleet_closed", "This UserGroupFleet is closed: create a new one to provision more groups.");
    this.name = "FleetClosedError";
  }
}

/** A group's own failure inside a batch run; the other groups of the run are not affected. */
export class FleetGroupError extends UserGroupsError {
  constructor(
    readonly resourceName: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("fleet_group_failed", `User group "${resourceName}": ${message}`, options);
    this.name = "FleetGroupError";
  }
}

/** ensureMany when some groups failed: each entry's outcome, in the order given. */
export class FleetEnsureError extends UserGroupsError {
  constructor(readonly outcomes: readonly PromiseSettledResult<GroupResult>[]) {
    const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    super(
      "fleet_ensure_failed",
      `${failed.length} of ${outcomes.length} groups failed: ` +
        failed.map((o) => (o.reason instanceof Error ? o.reason.message : String(o.reason))).join("; "),
    );
    this.name = "FleetEnsureError";
  }
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

type Request =
  | { readonly kind: "ensure"; readonly resourceName: string; readonly spec: GroupSpec; readonly waiter: Waiter<GroupResult> }
  | { readonly kind: "remove"; readonly resourceName: string; readonly userGroupId: string; readonly profile?: string; readonly waiter: Waiter<GroupResult> };

/** What a run's program saw of one group once the engine answered. */
interface GroupOutputs {
  readonly name: string;
  readonly token: string;
  readonly teamId: number;
  readonly apiEnvironmentTag?: Environment;
}

function urnOfGroup(stack: string, resourceName: string): string {
  return urnOf(stack, PROJECT_NAME, USER_GROUP_TYPE, resourceName);
}

/** Same fields as the stack holds (adoptExisting changes nothing once a group is held, R2). */
function holdsAsAsked(held: FleetGroup, spec: GroupSpec): boolean {
  const news: CheckedInputs = normalizeInputs(spec);
  return !diffUserGroup(held, news).changes;
}

function resultOf(spec: Pick<GroupSpec, "userGroupId" | "profile">, change: GroupResult["change"], outputs?: GroupOutputs): GroupResult {
  return {
    resourceName: resourceNameOf(spec),
    userGroupId: spec.userGroupId,
    ...(spec.profile !== undefined ? { profile: spec.profile } : {}),
    change,
    ...(outputs
      ? {
          name: outputs.name,
          token: outputs.token,
          teamId: outputs.teamId,
          ...(outputs.apiEnvironmentTag !== undefined ? { apiEnvironmentTag: outputs.apiEnvironmentTag } : {}),
        }
      : {}),
  };
}

interface RunOutcome {
  readonly changes: ReadonlyMap<string, GroupResult["change"]>;
  readonly diagnostics: ReadonlyMap<string, string>;
  /** The run's own error when it failed some groups (others may not have run at all). */
  readonly error?: unknown;
}

/** The error a group's caller gets: its own diagnostic, else why the run stopped before it. */
function groupError(resourceName: string, spec: GroupSpec | undefined, outcome: RunOutcome): Error {
  const diagnostic = outcome.diagnostics.get(resourceName);
  if (diagnostic === undefined) {
    return new FleetGroupError(resourceName, "the run stopped before this group was done (another group of its batch failed); nothing is lost: ask again", {
      cause: outcome.error,
    });
  }
  const exists = /already exists in the (Customer|Testing|API key's) environment/.exec(diagnostic);
  if (exists && spec) return new UserGroupExistsError(spec.userGroupId, exists[1] === "API key's" ? undefined : (exists[1] as Environment));
  return new FleetGroupError(resourceName, diagnostic, { cause: outcome.error });
}

export class UserGroupFleet {
  private readonly lockTimeoutMs: number;
  private readonly batchWindowMs: number;
  private readonly queue: Request[] = [];
  private stackHandle: Promise<{ stack: Stack; backendUrl: string }> | undefined;
  /** The backend's run lease store (undefined: a backend without one), made with the stack. */
  private leaseStore: LeaseStore | undefined;
  /** The lease's signal during a run: aborted if the lease is lost, which stops the engine. */
  private runSignal: AbortSignal | undefined;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private closed = false;
  /** Engine runs this fleet started (batches that needed one), for callers who measure. */
  engineRuns = 0;

  constructor(private readonly options: FleetOptions) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? 120_000;
    this.batchWindowMs = options.batchWindowMs ?? 25;
    if (!Number.isFinite(this.lockTimeoutMs) || this.lockTimeoutMs < 0) throw new RangeError("lockTimeoutMs must be a number >= 0");
    if (!Number.isFinite(this.batchWindowMs) || this.batchWindowMs < 0) throw new RangeError("batchWindowMs must be a number >= 0");
  }

  /** Makes sure the group exists as specified; resolves with its token (yours to keep secret) and what changed. */
  async ensure(spec: unknown): Promise<GroupResult> {
    return this.ensureValid(validateGroups([spec])[0]!);
  }

  /** ensure for several groups at once; results in the same order. Invalid entries fail the call before any run. */
  async ensureMany(specs: readonly unknown[]): Promise<GroupResult[]> {
    const valid = validateGroups(specs);
    const outcomes = await Promise.allSettled(valid.map((spec) => this.ensureValid(spec)));
    if (outcomes.every((o) => o.status === "fulfilled")) return outcomes.map((o) => (o as PromiseFulfilledResult<GroupResult>).value);
    throw new FleetEnsureError(outcomes);
  }

  /** Deletes one group of the fleet (change "delete"), or does nothing when the stack does not hold it (change "same"). */
  async remove(userGroupId: string, options: { profile?: string | undefined } = {}): Promise<GroupResult> {
    // The same rules as a spec's fields, so that a name never reaches the engine unchecked.
    const [checked] = validateGroups([{ name: "-", userGroupId, ...(options.profile !== undefined ? { profile: options.profile } : {}) }]);
    return this.enqueue((waiter) => ({
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
    return groupsInState(await (await this.stack()).exportStack());
  }

  /**
   * Drains: refuses new calls (FleetClosedError) and waits for every call made
   * before (they finish as usual), then lets go of the backend connection.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.draining ??= this.drain();
    }
    while (this.draining) await this.draining;
    await this.leaseStore?.close();
  }

  private ensureValid(spec: GroupSpec): Promise<GroupResult> {
    return this.enqueue((waiter) => ({ kind: "ensure", resourceName: resourceNameOf(spec), spec, waiter }));
  }

  private enqueue(make: (waiter: Waiter<GroupResult>) => Request): Promise<GroupResult> {
    if (this.closed) return Promise.reject(new FleetClosedError());
    return new Promise<GroupResult>((resolve, reject) => {
      this.queue.push(make({ resolve, reject }));
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

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = takeBatch(this.queue);
        try {
          if (batch[0]!.kind === "ensure") await this.runEnsures(batch as Extract<Request, { kind: "ensure" }>[]);
          else await this.runRemoves(batch as Extract<Request, { kind: "remove" }>[]);
        } catch (error) {
          // Whatever failed the whole batch fails each of its callers that is still waiting.
          const scrubbed = scrubSecrets(error, secretValuesOf(this.options));
          for (const request of batch) request.waiter.reject(scrubbed);
        }
      }
    } finally {
      this.draining = undefined;
    }
  }

  private stack(): Promise<Stack> {
    return this.selected().then(({ stack }) => stack);
  }

  private selected(): Promise<{ stack: Stack; backendUrl: string }> {
    if (this.stackHandle === undefined) {
      // Selected once per fleet (replicas racing to create it are handled there); each run brings its own program.
      this.stackHandle = selectStack(this.options, async () => ({})).then((selected) => {
        this.leaseStore ??= leaseStoreFor(selected.backendUrl, PROJECT_NAME, this.options.stack);
        return selected;
      });
      this.stackHandle.catch(() => {
        this.stackHandle = undefined; // let a later call try again
      });
    }
    return this.stackHandle;
  }

  private async runEnsures(batch: Extract<Request, { kind: "ensure" }>[]): Promise<void> {
    const stack = await this.stack();
    const held = new Map(groupsInState(await stack.exportStack()).map((group) => [group.resourceName, group]));
    const toRun = new Map<string, GroupSpec>();
    for (const request of batch) {
      const group = held.get(request.resourceName);
      if (group && holdsAsAsked(group, request.spec)) request.waiter.resolve(resultOf(request.spec, "same", group));
      else toRun.set(request.resourceName, request.spec);
    }
    if (toRun.size === 0) return;

    const outputs = new Map<string, GroupOutputs>();
    const outcome = await this.runEngine(toRun, async (tracker) => {
      outputs.clear();
      await stack.up({
        program: async () => {
          for (const [resourceName, spec] of toRun) {
            const group = declareGroup(spec);
            pulumi.all([group.name, group.token, group.teamId, group.apiEnvironmentTag]).apply(([name, token, teamId, apiEnvironmentTag]) => {
              outputs.set(resourceName, { name, token, teamId, ...(apiEnvironmentTag !== undefined ? { apiEnvironmentTag } : {}) });
            });
          }
          return { [FLEET_MARKER_OUTPUT]: true };
        },
        ...this.targetedRun(toRun, tracker),
      });
    });
    for (const request of batch) {
      if (!toRun.has(request.resourceName)) continue;
      const got = outputs.get(request.resourceName);
      const change = outcome.changes.get(request.resourceName) ?? "same";
      if (got && change !== "failed") request.waiter.resolve(resultOf(request.spec, change, got));
      else request.waiter.reject(groupError(request.resourceName, request.spec, outcome));
    }
  }

  private async runRemoves(batch: Extract<Request, { kind: "remove" }>[]): Promise<void> {
    const stack = await this.stack();
    const held = new Set(groupsInState(await stack.exportStack()).map((group) => group.resourceName));
    const toRemove = new Map<string, GroupSpec>();
    for (const request of batch) {
      const spec = { name: "-", userGroupId: request.userGroupId, ...(request.profile !== undefined ? { profile: request.profile } : {}) };
      if (!held.has(request.resourceName)) request.waiter.resolve(resultOf(spec, "same"));
      else toRemove.set(request.resourceName, spec);
    }
    if (toRemove.size === 0) return;
    const outcome = await this.runEngine(toRemove, (tracker) =>
      stack.destroy(this.targetedRun(toRemove, tracker)),
    );
    for (const request of batch) {
      if (!toRemove.has(request.resourceName)) continue;
      const change = outcome.changes.get(request.resourceName);
      if (change === "delete") request.waiter.resolve(resultOf(toRemove.get(request.resourceName)!, "delete"));
      else request.waiter.reject(groupError(request.resourceName, undefined, outcome));
    }
  }

  /** The options of an up or destroy of exactly these groups, each group's failure its own. */
  private targetedRun(groups: ReadonlyMap<string, GroupSpec>, tracker: ChangeTracker) {
    return {
      target: [...groups.keys()].map((name) => urnOfGroup(this.options.stack, name)),
      continueOnError: true,
      onEvent: tracker.handle,
      ...(this.options.onOutput ? { onOutput: this.options.onOutput } : {}),
      ...(this.options.parallel !== undefined ? { parallel: this.options.parallel } : {}),
      ...(this.runSignal ? { signal: this.runSignal } : {}),
    };
  }

  /**
   * One engine run of the batch's groups, waiting for the stack's lock. It holds
   * the stack's run lease, and first takes over what a dead replica left (F7:
   * its lock, its pending creates, adopted). A run that failed only some groups
   * (continueOnError) returns; their callers get their own errors from the
   * tracker. A failure that names none of the groups fails them all.
   */
  private async runEngine(
    groups: ReadonlyMap<string, GroupSpec>,
    run: (tracker: ChangeTracker) => Promise<unknown>,
  ): Promise<RunOutcome> {
    let tracker = new ChangeTracker(this.options.onEvent);
    this.engineRuns += 1;
    try {
      await withLockWait({ ...this.options, lockTimeoutMs: this.lockTimeoutMs }, async () => {
        const { stack, backendUrl } = await this.selected();
        return underRunLease(
          {
            stack,
            stackName: this.options.stack,
            backendUrl,
            store: this.leaseStore,
            adopt: true,
            outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
            ...(this.options.onOutput ? { onOutput: this.options.onOutput } : {}),
            ...(this.options.parallel !== undefined ? { parallel: this.options.parallel } : {}),
            ...(this.options.onTakeover ? { onTakeover: this.options.onTakeover } : {}),
          },
          async (signal) => {
            tracker = new ChangeTracker(this.options.onEvent);
            this.runSignal = signal;
            try {
              return await run(tracker);
            } finally {
              this.runSignal = undefined;
            }
          },
        );
      });
    } catch (error) {
      const failedGroups = [...groups.keys()].filter((name) => tracker.changes.get(name) === "failed");
      if (failedGroups.length === 0) throw error;
      return { changes: tracker.changes, diagnostics: tracker.diagnostics, error };
    }
    return { changes: tracker.changes, diagnostics: tracker.diagnostics };
  }
}

/**
 * The next batch: the oldest request's kind, and every later request of that kind,
 * except one that must wait for an earlier request of the other kind on the same
 * group (order per group is kept), or that asks a group already in the batch for
 * other fields (the later ask runs after, so it wins as it would one by one).
 */
export function takeBatch(queue: Request[]): Request[] {
  const kind = queue[0]!.kind;
  const batch: Request[] = [];
  const blocked = new Set<string>();
  const inBatch = new Map<string, Request>();
  const rest: Request[] = [];
  for (const request of queue) {
    const sameAsBatched = inBatch.get(request.resourceName);
    const joins =
      request.kind === kind &&
      !blocked.has(request.resourceName) &&
      (sameAsBatched === undefined ||
        request.kind === "remove" ||
        (sameAsBatched.kind === "ensure" && JSON.stringify(normalizeInputs(sameAsBatched.spec)) === JSON.stringify(normalizeInputs(request.spec))));
    if (joins) {
      batch.push(request);
      inBatch.set(request.resourceName, request);
    } else {
      rest.push(request);
      blocked.add(request.resourceName);
    }
  }
  queue.splice(0, queue.length, ...rest);
  return batch;
}

/** A whole-set run (the CLI's up/destroy, provisionUserGroups) refused on a fleet's stack. */
export class FleetStackError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly operation: string,
  ) {
    super(
      "fleet_stack",
      `Stack "${stackName}" is a UserGroupFleet's stack: its groups are added one by one by a service, and a whole-set ${operation} ` +
        `would ${operation === "destroy" ? "delete every one of them" : "delete every group the groups file does not list"}. Nothing was changed. ` +
        "Drive this stack with UserGroupFleet (remove() deletes one group), or pass --force if you really mean to.",
    );
    this.name = "FleetStackError";
  }
}

/** Is the stack of these options a fleet's (it carries the fleet's marker output)? A stack that does not exist yet is not, and is not made by asking. */
export async function isFleetStack(options: RunOptions): Promise<boolean> {
  let stack: Stack;
  try {
    ({ stack } = await selectStack(options, async () => ({}), { mustExist: true }));
  } catch (error) {
    if (error instanceof StackNotFoundError) return false;
    throw error;
  }
  const outputs = await stack.outputs();
  return outputs[FLEET_MARKER_OUTPUT]?.value === true;
}
