// The fault histories' checker (testkit/jepsen/checker.ts) on hand-made
// histories: a valid one passes, and each property, broken on purpose, is
// reported (so that a fault test cannot pass because its checker sees nothing).
import { describe, expect, it } from "vitest";
import { checkHistory, type FinalState, problemsOf, timeToServe } from "../../testkit/jepsen/checker";
import type { Op, OpError, OpValue, ServiceObservation } from "../../testkit/jepsen/history";
import { readFileSync } from "node:fs";
import path from "node:path";
import { isRetryableError, RETRYABLE_CODES } from "../../testkit/jepsen/retryable";
import { ERROR_CODES } from "../../provider/wire/error-codes";

const T1 = "a".repeat(64);
const T2 = "b".repeat(64);
const T3 = "c".repeat(64);

let next = 0;
function op(process: string, f: Op["f"], id: string | undefined, invokedAt: number, completedAt: number | undefined, outcome: Op["outcome"], extra: { value?: OpValue; error?: OpError; retryOf?: number } = {}): Op {
  return { index: next++, process, f, ...(id !== undefined ? { id } : {}), invokedAt, ...(completedAt !== undefined ? { completedAt } : {}), ...(outcome !== undefined ? { outcome } : {}), ...extra };
}
const ensureOk = (p: string, id: string, from: number, to: number, token: string, change = "create") => op(p, "ensure", id, from, to, "ok", { value: { change, token } });
const removeOk = (p: string, id: string, from: number, to: number, change = "delete") => op(p, "remove", id, from, to, "ok", { value: { change } });

/** The end every valid history below reaches: x with T1 on the service and in shard 0, y removed. */
function final(overrides: Partial<FinalState> = {}): FinalState {
  return {
    service: [{ user_group_id: "x", token: T1, environment: "Customer" }],
    shards: [
      { stack: "s", shard: 0, groups: [{ resourceName: "x-res", userGroupId: "x", token: T1 }] },
      { stack: "s.shard-1", shard: 1, groups: [] },
    ],
    directory: new Map([["x-res", 0], ["y-res", 1]]),
    ...overrides,
  };
}
const observed: ServiceObservation[] = [
  { time: 100, id: "x", token: T1 },
  { time: 300, id: "y", token: T2 },
  { time: 2_000, id: "y", token: undefined },
];

function validHistory(): Op[] {
  next = 0;
  return [
    ensureOk("r1", "x", 0, 1_000, T1),
    ensureOk("r2", "x", 500, 1_200, T1, "same"),
    ensureOk("r2", "y", 200, 900, T2),
    removeOk("r1", "y", 1_500, 2_500),
    op("r3", "list", undefined, 1_000, 1_100, "ok", { value: { groups: [{ userGroupId: "x", token: T1 }, { userGroupId: "y", token: T2 }] } }),
    op("r3", "ensure", "x", 1_300, 1_400, "fail", { error: { code: "stack_lock_timeout", message: "locked" } }),
  ].concat([]);
}

function withRetry(history: Op[]): Op[] {
  const failed = history.find((o) => o.outcome === "fail")!;
  return [...history, { ...ensureOk("r1", "x", 5_000, 5_500, T1, "same"), index: history.length, retryOf: failed.index }];
}

describe("the fault histories' checker", () => {
  it("passes a history the end agrees with", () => {
    const verdict = checkHistory(withRetry(validHistory()), final(), { observations: observed });
    expect(problemsOf(verdict)).toEqual([]);
    expect(verdict.valid).toBe(true);
    expect(verdict.counts).toMatchObject({ ok: 6, fail: 1, info: 0, retried: 1, groupsAtEnd: 1 });
  });

  it("finds a lost group: an ok ensure, no remove after it, missing at the end", () => {
    const verdict = checkHistory(withRetry(validHistory()), final({ service: [], shards: [{ stack: "s", shard: 0, groups: [] }] }), { observations: observed });
    expect(verdict.valid).toBe(false);
    expect(verdict.lost).toEqual([expect.stringContaining("x: #0 r1 ensure(x)")]);
  });

  it("does not call a group lost when a remove may have come after its ensure (even one that failed)", () => {
    next = 0;
    const history = [ensureOk("r1", "z", 0, 1_000, T3), op("r2", "remove", "z", 900, 1_500, "fail", { error: { code: "run_lease_lost", message: "lost" } })];
    history.push({ ...removeOk("r2", "z", 3_000, 3_500), index: 2, retryOf: 1 });
    const verdict = checkHistory(history, { service: [], shards: [] });
    expect(problemsOf(verdict)).toEqual([]);
  });

  it("finds a remove that did not remove: ok, no ensure after it, the group still there", () => {
    next = 0;
    const history = [ensureOk("r1", "x", 0, 1_000, T1), removeOk("r2", "x", 2_000, 3_000, "same")];
    const verdict = checkHistory(history, final(), { observations: observed });
    expect(verdict.kept).toEqual([expect.stringContaining("x: #1 r2 remove(x)")]);
    // An ensure that may have come after the remove explains it.
    const explained = checkHistory([...history, ensureOk("r3", "x", 2_500, 4_000, T1, "same")], final(), { observations: observed });
    expect(explained.kept).toEqual([]);
  });

  it("finds a doubled group: two on the service, or one id in two states", () => {
    const history = withRetry(validHistory());
    const twice = checkHistory(history, final({ service: [{ user_group_id: "x", token: T1, environment: "Customer" }, { user_group_id: "x", token: T3, environment: "Customer" }] }), { observations: observed });
    expect(twice.doubled).toEqual([expect.stringContaining("x: the service holds 2 groups")]);
    const twoStates = checkHistory(
      history,
      final({ shards: [{ stack: "s", shard: 0, groups: [{ resourceName: "x-res", userGroupId: "x", token: T1 }] }, { stack: "s.shard-1", shard: 1, groups: [{ resourceName: "x-res", userGroupId: "x", token: T1 }] }] }),
      { observations: observed },
    );
    expect(twoStates.doubled).toEqual([expect.stringContaining("x: held by 2 state resources")]);
  });

  it("finds orphans both ways, and a state whose token is not the service's", () => {
    const history = withRetry(validHistory());
    const serviceOnly = checkHistory(history, final({ service: [...final().service, { user_group_id: "y", token: T2, environment: "Customer" }] }), { observations: observed });
    expect(serviceOnly.orphaned).toEqual([expect.stringContaining("y: on the service")]);
    const stateOnly = checkHistory(
      history,
      final({ shards: [{ stack: "s", shard: 0, groups: [{ resourceName: "x-res", userGroupId: "x", token: T1 }] }, { stack: "s.shard-1", shard: 1, groups: [{ resourceName: "y-res", userGroupId: "y", token: T2 }] }] }),
      { observations: observed },
    );
    expect(stateOnly.orphaned).toEqual([expect.stringContaining("y: in s.shard-1's state but not on the service")]);
    const stale = checkHistory(history, final({ shards: [{ stack: "s", shard: 0, groups: [{ resourceName: "x-res", userGroupId: "x", token: T3 }] }] }), { observations: observed });
    expect(stale.orphaned).toEqual([expect.stringContaining("x: s's state holds token #")]);
    // A verdict goes to logs: a token is named by a short hash, never by any of its characters.
    expect(stale.orphaned.join("\n")).not.toContain("cccc");
  });

  it("finds a directory that dropped or misplaces a group a state holds", () => {
    const history = withRetry(validHistory());
    expect(checkHistory(history, final({ directory: new Map([["y-res", 1]]) }), { observations: observed }).directory).toEqual([expect.stringContaining("no entry")]);
    expect(checkHistory(history, final({ directory: new Map([["x-res", 1]]) }), { observations: observed }).directory).toEqual([expect.stringContaining("names shard 1")]);
  });

  it("finds a token the service never held, or not while the call ran, or that nothing explains at the end", () => {
    next = 0;
    const never = checkHistory([ensureOk("r1", "x", 0, 1_000, T3)], final({ directory: undefined }), { observations: observed });
    expect(never.tokens).toEqual(expect.arrayContaining([expect.stringContaining("never held this token"), expect.stringContaining("no remove could have replaced it")]));
    next = 0;
    // y's T2 was the service's from 300 to 2000: a call from 5000 to 6000 handing it out hands out a dead token.
    const late = checkHistory([ensureOk("r1", "y", 5_000, 6_000, T2, "same")], { service: [], shards: [] }, { observations: observed, ids: new Set(["y"]) });
    expect(late.tokens).toEqual([expect.stringContaining("not while the call was under way")]);
    next = 0;
    const listed = checkHistory([op("r1", "list", undefined, 0, 100, "ok", { value: { groups: [{ userGroupId: "x", token: T3 }] } })], final(), { observations: observed, ids: new Set(["x"]) });
    expect(listed.tokens).toEqual([expect.stringContaining("listed x with a token the service never held")]);
  });

  it("finds a failure that is not retryable, one never retried, and one whose retry failed", () => {
    const base = validHistory();
    const notRetryable = base.map((o) => (o.outcome === "fail" ? { ...o, error: { code: "user_group_exists", message: "exists" } } : o));
    expect(checkHistory(withRetry(notRetryable), final(), { observations: observed }).failures).toEqual([expect.stringContaining("user_group_exists is not retryable")]);
    expect(checkHistory(base, final(), { observations: observed }).failures).toEqual([expect.stringContaining("never retried")]);
    const failedRetry = [...base, { ...op("r1", "ensure", "x", 5_000, 5_500, "fail", { error: { code: "stack_lock_timeout", message: "again" } }), index: base.length, retryOf: 5 }];
    expect(checkHistory(failedRetry, final(), { observations: observed }).failures).toEqual(
      expect.arrayContaining([expect.stringContaining("its retry did not succeed")]),
    );
  });

  it("finds a call that never answered", () => {
    const history = [...withRetry(validHistory())];
    history.push(op("r2", "ensure", "x", 6_000, undefined, "info"));
    expect(checkHistory(history, final(), { observations: observed }).unanswered).toEqual([expect.stringContaining("info (no answer)")]);
  });

  it("exempts a killed replica's unanswered calls, but wants each retried with success", () => {
    const history = [...withRetry(validHistory())];
    history.push(op("r2", "ensure", "x", 6_000, undefined, "info"));
    const notRetried = checkHistory(history, final(), { observations: observed, crashed: new Set(["r2"]) });
    expect(notRetried.unanswered).toEqual([]);
    expect(notRetried.failures).toEqual([expect.stringContaining("a call of a killed replica, never retried with success")]);
    history.push({ ...ensureOk("r3", "x", 7_000, 8_000, T1, "same"), index: history.length, retryOf: history.length - 1 });
    expect(problemsOf(checkHistory(history, final(), { observations: observed, crashed: new Set(["r2"]) }))).toEqual([]);
  });

  it("takes an error's own retryable flag over the code list", () => {
    expect(isRetryableError({ code: "stack_lock_timeout" })).toBe(true);
    expect(isRetryableError({ code: "user_group_exists" })).toBe(false);
    expect(isRetryableError({ code: "whatever", retryable: true })).toBe(true);
    expect(isRetryableError({ code: "stack_lock_timeout", retryable: false })).toBe(false);
  });

  it("takes as retryable exactly the codes docs/cli-json.md tells callers to ask again, each a code of ours", () => {
    const doc = readFileSync(path.join(__dirname, "../../docs/cli-json.md"), "utf8");
    const paragraph = doc.slice(doc.indexOf("**Which failures to ask again.**"), doc.indexOf("(the list the fault histories check"));
    const listed = [...paragraph.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    expect([...RETRYABLE_CODES].sort()).toEqual([...new Set(listed)].sort());
    for (const code of RETRYABLE_CODES) expect(Object.keys(ERROR_CODES)).toContain(code);
  });

  it("measures the time to serve again from another replica's first engine-backed ok after the fault", () => {
    next = 0;
    const history = [
      ensureOk("r1", "x", 1_000, 2_000, T1), // before the fault
      ensureOk("r2", "x", 6_000, 7_000, T1, "same"), // from the state: proves nothing
      ensureOk("r1", "y", 6_000, 9_000, T2), // the paused replica itself
      ensureOk("r2", "y", 7_000, 12_000, T2),
      removeOk("r3", "x", 8_000, 11_000),
    ];
    expect(timeToServe(history, { startedAt: 5_000, target: "r1" })).toBe(6_000);
    // A call that was waiting for the stack when the fault hit its holder, answered after: served by another replica.
    expect(timeToServe([...history, removeOk("r3", "z", 4_000, 10_000)], { startedAt: 5_000, target: "r1" })).toBe(5_000);
    expect(timeToServe(history, { startedAt: 5_000 })).toBe(4_000);
    expect(timeToServe(history, { startedAt: 20_000 })).toBeUndefined();
  });
});
