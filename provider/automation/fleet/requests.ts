// What callers queue and get back: requests, how a batch is taken from the
// queue, and a group's result from what the run saw.
import { diffUserGroup } from "../../logic/diff";
import { type CheckedInputs, normalizeInputs } from "../../logic/inputs";
import { USER_GROUP_TYPE } from "../../resource/user-group";
import { type FleetGroup } from "./fleet-state";
import { type GroupSpec, resourceNameOf, urnOf, type EnsuredGroup, type GroupChange, type GroupResult } from "../model";
import { PROJECT_NAME, type ResolvedGroup } from "../engine";

export interface Waiter<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

export type Request =
  | { readonly kind: "ensure"; readonly resourceName: string; readonly spec: GroupSpec; readonly waiter: Waiter<EnsuredGroup> }
  | { readonly kind: "remove"; readonly resourceName: string; readonly userGroupId: string; readonly profile?: string; readonly waiter: Waiter<GroupResult> };

/** What a run's program saw of one group once the engine answered. */
export type GroupOutputs = ResolvedGroup;

export function urnOfGroup(stack: string, resourceName: string): string {
  return urnOf(stack, PROJECT_NAME, USER_GROUP_TYPE, resourceName);
}

/** Same fields as the stack holds (adoptExisting changes nothing once a group is held, R2). */
export function holdsAsAsked(held: FleetGroup, spec: GroupSpec): boolean {
  const news: CheckedInputs = normalizeInputs(spec);
  return !diffUserGroup(held, news).changes;
}

export function resultOf(spec: Pick<GroupSpec, "userGroupId" | "profile">, change: GroupResult["change"], outputs: GroupOutputs): EnsuredGroup;
export function resultOf(spec: Pick<GroupSpec, "userGroupId" | "profile">, change: GroupResult["change"]): GroupResult;
export function resultOf(spec: Pick<GroupSpec, "userGroupId" | "profile">, change: GroupResult["change"], outputs?: GroupOutputs): GroupResult {
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

/** The spec a request names: an ensure's own, a remove's identity (validated when it was made). */
export function specOf(request: Request): GroupSpec {
  if (request.kind === "ensure") return request.spec;
  return { name: "-", userGroupId: request.userGroupId, ...(request.profile !== undefined ? { profile: request.profile } : {}) };
}

/** The answer the state gives already, with no run: an ensure of a group held as asked, a remove of one not held ("same"). */
export function answeredByState(request: Request, held: FleetGroup | undefined): GroupResult | undefined {
  if (request.kind === "ensure") return held && holdsAsAsked(held, request.spec) ? resultOf(request.spec, "same", held) : undefined;
  return held ? undefined : resultOf(specOf(request), "same");
}

/** The most telling change a group saw over the runs of its batch (a create stays a create when a later run finds it "same"). */
export function mergeChanges(into: Map<string, GroupChange>, changes: ReadonlyMap<string, GroupChange>): void {
  for (const [name, change] of changes) if ((into.get(name) ?? "same") === "same") into.set(name, change);
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
