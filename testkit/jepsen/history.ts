// A Jepsen-style history of the fleet's calls (issue 32 item 6): every call a
// replica makes is recorded twice, as its invocation and as its completion
// ("ok", "fail", or "info" when no answer came: it may or may not have taken
// effect). Times are the recorder's (this process's) clock in ms since the
// history began: an invocation is stamped when the call is sent to the replica,
// a completion when its answer arrives, so the real call lies inside the pair.
// Shared by the checker (checker.ts), the runner (run-history.ts), the tests
// in test/jepsen/ and bench/faults.ts.

export type OpKind = "ensure" | "remove" | "list";
export type OpOutcome = "ok" | "fail" | "info";

/** What an ok call returned. */
export interface OpValue {
  /** ensure: the change ("create", "same", "update", ...); remove: "delete" or "same". */
  readonly change?: string;
  /** ensure: the token handed to the caller. */
  readonly token?: string;
  /** list: each group it listed. */
  readonly groups?: readonly { readonly userGroupId: string; readonly token: string }[];
}

/** A failed call's error, as the replica saw it. */
export interface OpError {
  readonly code?: string;
  readonly message: string;
  /** Set when the error itself says whether asking again may help (a future error field). */
  readonly retryable?: boolean;
}

/** One call: its invocation and, once known, its completion. */
export interface Op {
  /** Unique in its history, in the order of invocation. */
  readonly index: number;
  /** The replica that made it ("r1", ...). */
  readonly process: string;
  readonly f: OpKind;
  /** The group id (ensure, remove). */
  readonly id?: string;
  readonly invokedAt: number;
  outcome?: OpOutcome;
  completedAt?: number;
  value?: OpValue;
  error?: OpError;
  /** This call retries the failed call with that index (after the faults healed). */
  readonly retryOf?: number;
  /** Made while a fault was on (its kind), for the report. */
  readonly duringFault?: string;
}

/** A fault as it happened: from start to heal, in history time. */
export interface FaultEvent {
  readonly kind: string;
  /** The replica it hit (undefined: the database, for every replica). */
  readonly target?: string;
  readonly startedAt: number;
  healedAt?: number;
  /** What the injector did, for the report. */
  readonly detail?: string;
}

/** A moment's token of a group on the service, sampled by the recorder. */
export interface ServiceObservation {
  readonly time: number;
  readonly id: string;
  /** undefined: the service held no group of that id then. */
  readonly token: string | undefined;
}

/** Records ops and faults with one clock. */
export class HistoryRecorder {
  readonly ops: Op[] = [];
  readonly faults: FaultEvent[] = [];
  readonly observations: ServiceObservation[] = [];
  private readonly origin = Date.now();
  private readonly lastSeen = new Map<string, string | undefined>();

  now(): number {
    return Date.now() - this.origin;
  }

  invoke(process: string, f: OpKind, id: string | undefined, extra: { retryOf?: number; duringFault?: string } = {}): Op {
    const op: Op = { index: this.ops.length, process, f, ...(id !== undefined ? { id } : {}), invokedAt: this.now(), ...extra };
    this.ops.push(op);
    return op;
  }

  complete(op: Op, outcome: OpOutcome, result: { value?: OpValue; error?: OpError } = {}): void {
    if (op.outcome !== undefined) return; // an answer after an "info" (the history was cut) is kept as info
    op.outcome = outcome;
    op.completedAt = this.now();
    if (result.value !== undefined) op.value = result.value;
    if (result.error !== undefined) op.error = result.error;
  }

  faultStarted(kind: string, target: string | undefined, detail?: string): FaultEvent {
    const event: FaultEvent = { kind, ...(target !== undefined ? { target } : {}), startedAt: this.now(), ...(detail !== undefined ? { detail } : {}) };
    this.faults.push(event);
    return event;
  }

  faultHealed(event: FaultEvent): void {
    event.healedAt ??= this.now();
  }

  /** Records the service's groups now (only changes are kept). `ids` limits it to the history's ids. */
  observe(groups: readonly { readonly user_group_id: string; readonly token: string }[], ids?: ReadonlySet<string>): void {
    const time = this.now();
    const now = new Map<string, string>();
    for (const g of groups) if (ids === undefined || ids.has(g.user_group_id)) now.set(g.user_group_id, g.token);
    for (const id of new Set([...now.keys(), ...this.lastSeen.keys()])) {
      const token = now.get(id);
      if (this.lastSeen.has(id) && this.lastSeen.get(id) === token) continue;
      this.lastSeen.set(id, token);
      this.observations.push({ time, id, token });
    }
  }
}

/** One line per op, for a failure message or a saved history. */
export function describeOp(op: Op): string {
  const what = `${op.f}${op.id !== undefined ? `(${op.id})` : "()"}`;
  const end = op.completedAt !== undefined ? `${(op.completedAt / 1000).toFixed(2)}s` : "-";
  const result =
    op.outcome === "ok"
      ? `ok ${op.value?.change ?? ""}${op.value?.token !== undefined ? ` token ${op.value.token.slice(0, 8)}…` : ""}${op.value?.groups ? ` ${op.value.groups.length} groups` : ""}`
      : op.outcome === "fail"
        ? `fail ${op.error?.code ?? "?"}: ${(op.error?.message ?? "").split("\n")[0]!.slice(0, 160)}`
        : "info (no answer)";
  return `#${op.index} ${op.process} ${what} ${(op.invokedAt / 1000).toFixed(2)}s..${end} ${result}${op.retryOf !== undefined ? ` (retry of #${op.retryOf})` : ""}`;
}
