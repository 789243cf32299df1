// The checker (issue 32 items 3 and 6): replays a history of ensure/remove/list
// calls against what is there at the end: the service's groups, every shard
// stack's state and the shard directory. Each property is checked for itself
// and reported with the ops that show it broken:
//
// - lost:     an ensure that returned ok, whose group is missing at the end,
//             and no remove that could have come after it (a remove whose
//             completion, or lack of one, is later than the ensure's invocation);
// - kept:     a remove that returned ok ("delete" or "same"), whose group is
//             there at the end, and no ensure that could have come after it;
// - doubled:  two service groups of one id (one environment), or two state
//             resources (in any shards) holding one id;
// - orphaned: a service group of the history's ids that no state holds, a state
//             group the service does not have, or a state whose token is not the
//             service's;
// - directory: a group a shard's state holds whose directory entry is missing
//             or names another shard;
// - tokens:   an ok ensure's token (and every token an ok list showed) must be
//             one the service held for that id while the call was under way
//             (from the recorder's samples of the service, when given); and an
//             ensure's token that is not the final one needs a remove that could
//             have come after it;
// - failures: a failed call's error must be retryable (retryable.ts), and a
//             retry of it (an op with `retryOf`) must have succeeded;
// - unanswered: a call that never answered (info) although the history ran
//             on long after every fault healed (a killed replica's calls are
//             exempt, but must have been retried with success elsewhere).
import { createHash } from "node:crypto";
import type { Op, ServiceObservation } from "./history";
import { describeOp } from "./history";
import { isRetryableError } from "./retryable";

/** A token as a verdict names it: a short hash, never any of its characters (verdicts go to logs). */
export function tokenTag(token: string): string {
  return `#${createHash("sha256").update(token).digest("hex").slice(0, 8)}`;
}

export interface ServiceGroup {
  readonly user_group_id: string;
  readonly token: string;
  readonly environment?: string;
}

export interface StateGroup {
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly token: string;
}

export interface ShardState {
  /** The Pulumi stack's name (the stack itself or `<stack>.shard-<n>`). */
  readonly stack: string;
  readonly shard: number;
  readonly groups: readonly StateGroup[];
}

export interface FinalState {
  /** The service's groups at the end (`GET /__admin/groups`), every entry, duplicates included. */
  readonly service: readonly ServiceGroup[];
  /** Every shard stack's groups at the end (`pulumi stack export`). */
  readonly shards: readonly ShardState[];
  /** The shard directory (resource name -> shard); undefined for a backend without one. */
  readonly directory?: ReadonlyMap<string, number>;
}

export interface CheckOptions {
  /** Samples of the service's tokens over the history (HistoryRecorder.observations). */
  readonly observations?: readonly ServiceObservation[];
  /** How far apart the samples may be, in ms (a token seen up to this long after a call ended counts). Default 250. */
  readonly sampleSlackMs?: number;
  /** Ids the check is about (default: every id the history names). Other service groups are ignored. */
  readonly ids?: ReadonlySet<string>;
  /**
   * Replicas that were killed: their unanswered calls died with them (their
   * callers' connections broke), so they are not "unanswered"; each must have
   * been retried (as its caller would) with success, like a failed call.
   */
  readonly crashed?: ReadonlySet<string>;
}

export interface Verdict {
  readonly valid: boolean;
  readonly lost: readonly string[];
  readonly kept: readonly string[];
  readonly doubled: readonly string[];
  readonly orphaned: readonly string[];
  readonly directory: readonly string[];
  readonly tokens: readonly string[];
  readonly failures: readonly string[];
  readonly unanswered: readonly string[];
  /** Counts, for the bench: ops by outcome, groups at the end. */
  readonly counts: { readonly ok: number; readonly fail: number; readonly info: number; readonly retried: number; readonly groupsAtEnd: number };
}

/** Every problem of a verdict, one line each (empty when valid). */
export function problemsOf(verdict: Verdict): string[] {
  return [
    ...verdict.lost.map((p) => `lost: ${p}`),
    ...verdict.kept.map((p) => `not removed: ${p}`),
    ...verdict.doubled.map((p) => `doubled: ${p}`),
    ...verdict.orphaned.map((p) => `orphaned: ${p}`),
    ...verdict.directory.map((p) => `directory: ${p}`),
    ...verdict.tokens.map((p) => `token: ${p}`),
    ...verdict.failures.map((p) => `failure: ${p}`),
    ...verdict.unanswered.map((p) => `unanswered: ${p}`),
  ];
}

const INFINITY = Number.POSITIVE_INFINITY;
const endOf = (op: Op): number => (op.outcome === "ok" || op.outcome === "fail" ? (op.completedAt ?? INFINITY) : INFINITY);
/** Could `later` have taken effect after `earlier` did? (A failed or unanswered call may have taken effect.) */
const mayFollow = (later: Op, earlier: Op): boolean => endOf(later) > earlier.invokedAt;
const mayHaveActed = (op: Op): boolean => op.outcome !== undefined;

/** The intervals [first seen, next change) during which each (id, token) was the service's. */
function tokenIntervals(observations: readonly ServiceObservation[]): Map<string, Array<{ token: string; from: number; to: number }>> {
  const byId = new Map<string, ServiceObservation[]>();
  for (const o of observations) byId.set(o.id, [...(byId.get(o.id) ?? []), o]);
  const intervals = new Map<string, Array<{ token: string; from: number; to: number }>>();
  for (const [id, seen] of byId) {
    const sorted = [...seen].sort((a, b) => a.time - b.time);
    const list: Array<{ token: string; from: number; to: number }> = [];
    for (const [i, o] of sorted.entries()) {
      if (o.token !== undefined) list.push({ token: o.token, from: o.time, to: sorted[i + 1]?.time ?? INFINITY });
    }
    intervals.set(id, list);
  }
  return intervals;
}

export function checkHistory(history: readonly Op[], final: FinalState, options: CheckOptions = {}): Verdict {
  const slack = options.sampleSlackMs ?? 250;
  const ids = options.ids ?? new Set(history.map((op) => op.id).filter((id): id is string => id !== undefined));
  const lost: string[] = [];
  const kept: string[] = [];
  const doubled: string[] = [];
  const orphaned: string[] = [];
  const directory: string[] = [];
  const tokens: string[] = [];
  const failures: string[] = [];
  const unanswered: string[] = [];

  // The end: the service (per environment) and the states.
  const serviceGroups = final.service.filter((g) => ids.has(g.user_group_id));
  const serviceById = new Map<string, ServiceGroup[]>();
  for (const g of serviceGroups) serviceById.set(g.user_group_id, [...(serviceById.get(g.user_group_id) ?? []), g]);
  for (const [id, groups] of serviceById) {
    const byEnvironment = new Map<string, number>();
    for (const g of groups) byEnvironment.set(g.environment ?? "", (byEnvironment.get(g.environment ?? "") ?? 0) + 1);
    for (const [environment, n] of byEnvironment) if (n > 1) doubled.push(`${id}: the service holds ${n} groups of this id${environment ? ` (${environment})` : ""}`);
  }
  const stateById = new Map<string, Array<StateGroup & { shard: number; stack: string }>>();
  for (const shard of final.shards) {
    for (const g of shard.groups) stateById.set(g.userGroupId, [...(stateById.get(g.userGroupId) ?? []), { ...g, shard: shard.shard, stack: shard.stack }]);
  }
  for (const [id, held] of stateById) {
    if (held.length > 1) doubled.push(`${id}: held by ${held.length} state resources (${held.map((g) => `${g.stack}:${g.resourceName}`).join(", ")})`);
  }
  const finalToken = (id: string): string | undefined => serviceById.get(id)?.[0]?.token;
  for (const [id, groups] of serviceById) {
    const held = stateById.get(id);
    if (held === undefined) orphaned.push(`${id}: on the service (token ${tokenTag(groups[0]!.token)}) but in no shard's state`);
  }
  for (const [id, held] of stateById) {
    if (!ids.has(id)) continue;
    const onService = finalToken(id);
    for (const g of held) {
      if (onService === undefined) orphaned.push(`${id}: in ${g.stack}'s state but not on the service`);
      else if (g.token !== onService) orphaned.push(`${id}: ${g.stack}'s state holds token ${tokenTag(g.token)}, the service ${tokenTag(onService)}`);
      if (final.directory !== undefined) {
        const entry = final.directory.get(g.resourceName);
        if (entry === undefined) directory.push(`${id}: ${g.stack}'s state holds it (${g.resourceName}) but the shard directory has no entry for it`);
        else if (entry !== g.shard) directory.push(`${id}: ${g.stack} (shard ${g.shard}) holds it but the directory names shard ${entry}`);
      }
    }
  }

  // The history against the end.
  const opsOf = new Map<string, Op[]>();
  for (const op of history) if (op.id !== undefined) opsOf.set(op.id, [...(opsOf.get(op.id) ?? []), op]);
  for (const [id, ops] of opsOf) {
    if (!ids.has(id)) continue;
    const present = serviceById.has(id);
    const removes = ops.filter((op) => op.f === "remove" && mayHaveActed(op));
    const ensures = ops.filter((op) => op.f === "ensure" && mayHaveActed(op));
    if (!present) {
      const ensured = ops.find((op) => op.f === "ensure" && op.outcome === "ok" && !removes.some((r) => mayFollow(r, op)));
      if (ensured) lost.push(`${id}: ${describeOp(ensured)}; no remove could follow it, and the group is missing at the end`);
    } else {
      const removed = ops.find((op) => op.f === "remove" && op.outcome === "ok" && !ensures.some((e) => mayFollow(e, op)));
      if (removed) kept.push(`${id}: ${describeOp(removed)}; no ensure could follow it, and the group is there at the end`);
    }
  }

  // Tokens handed out.
  const intervals = options.observations ? tokenIntervals(options.observations) : undefined;
  const heldWhile = (id: string, token: string, op: Op): "held" | "never" | "not-then" => {
    const list = intervals?.get(id)?.filter((i) => i.token === token) ?? [];
    if (list.length === 0) return "never";
    const from = op.invokedAt - slack;
    const to = (op.completedAt ?? INFINITY) + slack;
    return list.some((i) => i.from <= to && i.to >= from) ? "held" : "not-then";
  };
  for (const op of history) {
    if (op.outcome !== "ok") continue;
    if (op.f === "ensure" && op.id !== undefined && ids.has(op.id)) {
      const token = op.value?.token;
      if (token === undefined) {
        tokens.push(`${describeOp(op)}: no token handed out`);
        continue;
      }
      if (intervals) {
        const verdict = heldWhile(op.id, token, op);
        if (verdict === "never") tokens.push(`${describeOp(op)}: the service never held this token for ${op.id}`);
        else if (verdict === "not-then") tokens.push(`${describeOp(op)}: the service held this token for ${op.id}, but not while the call was under way`);
      }
      const onService = finalToken(op.id);
      const removes = (opsOf.get(op.id) ?? []).filter((r) => r.f === "remove" && mayHaveActed(r) && mayFollow(r, op));
      if (onService !== undefined && onService !== token && removes.length === 0) {
        tokens.push(`${describeOp(op)}: the service's token is ${tokenTag(onService)} at the end and no remove could have replaced it`);
      }
    }
    if (op.f === "list" && intervals) {
      for (const g of op.value?.groups ?? []) {
        if (!ids.has(g.userGroupId)) continue;
        if (heldWhile(g.userGroupId, g.token, op) === "never") tokens.push(`${describeOp(op)}: listed ${g.userGroupId} with a token the service never held`);
      }
    }
  }

  // Failures: retryable, and retried with success.
  const retriesOf = new Map<number, Op[]>();
  for (const op of history) if (op.retryOf !== undefined) retriesOf.set(op.retryOf, [...(retriesOf.get(op.retryOf) ?? []), op]);
  let retried = 0;
  for (const op of history) {
    if (op.outcome === "fail") {
      if (!isRetryableError(op.error ?? { message: "" })) failures.push(`${describeOp(op)}: error code ${op.error?.code ?? "(none)"} is not retryable`);
      const retries = retriesOf.get(op.index) ?? [];
      if (retries.length > 0) retried += 1;
      // A retry that failed is reported with the call it retried.
      if (op.retryOf === undefined && !retries.some((r) => r.outcome === "ok")) {
        failures.push(`${describeOp(op)}: ${retries.length === 0 ? "never retried" : `its retry did not succeed (${retries.map(describeOp).join("; ")})`}`);
      }
    } else if (op.outcome === undefined || op.outcome === "info") {
      if (!options.crashed?.has(op.process)) unanswered.push(describeOp(op));
      else if (op.retryOf === undefined && !(retriesOf.get(op.index) ?? []).some((r) => r.outcome === "ok")) {
        failures.push(`${describeOp(op)}: a call of a killed replica, never retried with success`);
      }
      if ((retriesOf.get(op.index) ?? []).length > 0) retried += 1;
    }
  }

  const count = (outcome: string) => history.filter((op) => (op.outcome ?? "info") === outcome).length;
  const all = [lost, kept, doubled, orphaned, directory, tokens, failures, unanswered];
  return {
    valid: all.every((list) => list.length === 0),
    lost,
    kept,
    doubled,
    orphaned,
    directory,
    tokens,
    failures,
    unanswered,
    counts: { ok: count("ok"), fail: count("fail"), info: count("info"), retried, groupsAtEnd: serviceGroups.length },
  };
}

/**
 * Time to serve again after a fault: from its start to the first call that
 * returned ok and needed an engine run (a create or a delete; an answer from the
 * state alone proves nothing), of another replica when the fault hit one (the
 * holder: then any such call of another replica answered after the start got
 * the stack after the holder, even one that was waiting for it when the fault
 * landed), or of any replica, invoked after the start, for a fault of the
 * database. undefined when none did.
 */
export function timeToServe(history: readonly Op[], fault: { readonly startedAt: number; readonly target?: string }): number | undefined {
  const served = history.filter(
    (op) =>
      op.outcome === "ok" &&
      (fault.target === undefined ? op.invokedAt >= fault.startedAt : op.process !== fault.target && op.completedAt! >= fault.startedAt) &&
      (op.value?.change === "create" || op.value?.change === "delete"),
  );
  if (served.length === 0) return undefined;
  return Math.min(...served.map((op) => op.completedAt!)) - fault.startedAt;
}
