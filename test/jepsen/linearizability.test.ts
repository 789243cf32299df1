// The second checker of the fault histories (testkit/jepsen/linearizability.ts:
// porcupine v1.3.1, built by scripts/ensure-linearizability, with a model of one
// group under ensure/remove/list) on hand-made histories: it finds what is not
// linearizable, explains it, and passes what is, indeterminate calls included
// (placed anywhere after their invocation, or nowhere, as Jepsen places them).
// The unit tier's one built tool: the Go build is cached (~/.cache/pulumi-user-groups),
// so after the first run this file takes well under a second.
import { beforeAll, describe, expect, it } from "vitest";
import type { Op, OpValue } from "../../testkit/jepsen/history";
import { checkLinearizable, checkPorcupineHistory, porcupineCheckPath, type PorcupineOperation } from "../../testkit/jepsen/linearizability";
import { checkHistory } from "../../testkit/jepsen/checker";

const T1 = `secret-token-${"a".repeat(40)}`;
const T2 = `secret-token-${"b".repeat(40)}`;

let next = 0;
function op(process: string, f: Op["f"], id: string | undefined, invokedAt: number, completedAt: number | undefined, outcome: Op["outcome"], value?: OpValue): Op {
  return { index: next++, process, f, ...(id !== undefined ? { id } : {}), invokedAt, ...(completedAt !== undefined ? { completedAt } : {}), ...(outcome !== undefined ? { outcome } : {}), ...(value ? { value } : {}) };
}
const ensure = (p: string, from: number, to: number, token: string) => op(p, "ensure", "x", from, to, "ok", { change: "create", token });
const remove = (p: string, from: number, to: number) => op(p, "remove", "x", from, to, "ok", { change: "delete" });
const list = (p: string, from: number, to: number, token?: string) => op(p, "list", undefined, from, to, "ok", { groups: token === undefined ? [] : [{ userGroupId: "x", token }] });
const unanswered = (p: string, f: "ensure" | "remove", from: number) => op(p, f, "x", from, undefined, "info");
const failed = (p: string, f: "ensure" | "remove", from: number, to: number) => ({ ...op(p, f, "x", from, to, "fail"), error: { code: "backend_unreachable", message: "cut off" } });
const ids = new Set(["x"]);

beforeAll(() => {
  porcupineCheckPath(); // the Go build, once (cached after)
}, 300_000);

describe("porcupine on the fleet's histories", () => {
  it("finds a list that misses a group an ensure made after a remove had returned", () => {
    next = 0;
    const verdict = checkLinearizable([remove("r1", 0, 100), ensure("r2", 200, 300, T1), list("r3", 400, 500)], { ids });
    expect(verdict.valid).toBe(false);
    expect(verdict.problems).toHaveLength(1);
    expect(verdict.problems[0]).toMatch(/^linearizability \(porcupine\): x: NOT LINEARIZABLE/);
    expect(verdict.problems[0]).toContain("#2 r3 list 0.400s..0.500s -> not listed: the group is there, yet the list did not show it");
  });

  it("finds a stale read: a list that shows a group removed before it began", () => {
    next = 0;
    const verdict = checkLinearizable([ensure("r1", 0, 100, T1), remove("r2", 200, 300), list("r3", 400, 500, T1)], { ids });
    expect(verdict.valid).toBe(false);
    expect(verdict.problems[0]).toMatch(/the group is absent, yet the list showed it/);
    // The longest order it found, with the state it leaves.
    expect(verdict.problems[0]).toMatch(/#1 r2 remove 0\.200s\.\.0\.300s -> ok {2}=> absent/);
  });

  it("finds an ensure that hands out another token for a group that stayed, and never shows a token in the clear", () => {
    next = 0;
    const verdict = checkLinearizable([ensure("r1", 0, 100, T1), ensure("r2", 200, 300, T2)], { ids });
    expect(verdict.valid).toBe(false);
    expect(verdict.problems[0]).toMatch(/an ensure must hand out the token it has/);
    expect(verdict.report).not.toContain("secret-token");
    expect(verdict.report).toMatch(/token #[0-9a-f]{8}/);
  });

  it("finds a group lost at the end: the final read misses an ensure no remove could undo", () => {
    next = 0;
    const history = [ensure("r1", 0, 100, T1), list("r2", 200, 300, T1)];
    expect(checkLinearizable(history, { ids }).valid).toBe(true);
    const verdict = checkLinearizable(history, { ids, finalRead: [] });
    expect(verdict.valid).toBe(false);
    expect(verdict.problems[0]).toMatch(/final-read list .* -> not listed/);
  });

  it("passes overlapping calls in whichever order explains them", () => {
    next = 0;
    // The remove overlaps both lists: before the second, after the first.
    const history = [ensure("r1", 0, 100, T1), remove("r2", 150, 600), list("r3", 200, 300, T1), list("r3", 400, 500), ensure("r1", 550, 700, T2), list("r2", 800, 900, T2)];
    const verdict = checkLinearizable(history, { ids, finalRead: [{ userGroupId: "x", token: T2 }] });
    expect(verdict.problems).toEqual([]);
    expect(verdict.report).toMatch(/^x: linearizable \(7 operations\)$/m);
  });

  it("places an unanswered call anywhere after its invocation, or nowhere (Jepsen's indeterminate call)", () => {
    next = 0;
    // An ensure that never answered, seen by later lists (with a token it never handed out to its caller).
    const tookEffect = [unanswered("r1", "ensure", 0), list("r2", 100, 200), list("r2", 300, 400, T1), ensure("r3", 500, 600, T1)];
    expect(checkLinearizable(tookEffect, { ids }).problems).toEqual([]);
    // A remove that never answered: it may land between two lists, or never.
    const late = [ensure("r1", 0, 100, T1), unanswered("r2", "remove", 150), list("r3", 200, 300, T1), list("r3", 400, 500)];
    expect(checkLinearizable(late, { ids }).problems).toEqual([]);
    const never = [ensure("r1", 0, 100, T1), unanswered("r2", "remove", 150), list("r3", 200, 300, T1), list("r3", 400, 500, T1)];
    expect(checkLinearizable(never, { ids }).problems).toEqual([]);
    // But it takes effect once: a group it removed does not come back without an ensure.
    const back = [...late, list("r3", 600, 700, T1)];
    expect(checkLinearizable(back, { ids }).problems[0]).toMatch(/the group is absent, yet the list showed it/);
  });

  it("takes a fleet call that failed as indeterminate (it may have acted, as checker.ts assumes), not as one that did nothing", () => {
    next = 0;
    // The failed ensure's run created the group before it lost the stack: the list sees it.
    const history = [failed("r1", "ensure", 0, 100), list("r2", 300, 400, T1)];
    expect(checkLinearizable(history, { ids }).problems).toEqual([]);
    // Jepsen's "fail" (certainly no effect), given to porcupine-check as such, leaves the list unexplained.
    const asJepsenFail: PorcupineOperation[] = [
      { index: 0, client: "r1", f: "ensure", id: "x", call: 0, return: 100, outcome: "fail" },
      { index: 1, client: "r2", f: "list", call: 300, return: 400, outcome: "ok", groups: [{ id: "x", token: "#t1" }] },
    ];
    expect(checkPorcupineHistory({ operations: asJepsenFail }).problems[0]).toMatch(/the group is absent, yet the list showed it/);
  });

  it("checks each group id by itself, and names only the one that breaks", () => {
    next = 0;
    const y = (f: Op["f"], from: number, to: number, value?: OpValue) => op("r4", f, "y", from, to, "ok", value);
    const history = [ensure("r1", 0, 100, T1), y("ensure", 0, 100, { change: "create", token: T2 }), remove("r2", 200, 300), op("r3", "list", undefined, 400, 500, "ok", { groups: [{ userGroupId: "y", token: T2 }] })];
    expect(checkLinearizable(history).problems).toEqual([]);
    const stale = [...history, op("r3", "list", undefined, 600, 700, "ok", { groups: [{ userGroupId: "x", token: T1 }, { userGroupId: "y", token: T2 }] })];
    const verdict = checkLinearizable(stale);
    expect(verdict.problems).toHaveLength(1);
    expect(verdict.problems[0]).toMatch(/^linearizability \(porcupine\): x: NOT LINEARIZABLE/);
    expect(verdict.report).toMatch(/^y: linearizable/m);
  });

  it("agrees with our own checker where both see the history's end", () => {
    next = 0;
    // An ensure's group missing at the end with no remove: our checker's "lost", porcupine's unexplained final read.
    const history = [ensure("r1", 0, 100, T1)];
    expect(checkHistory(history, { service: [], shards: [] }).lost).toHaveLength(1);
    expect(checkLinearizable(history, { ids, finalRead: [] }).valid).toBe(false);
  });

  it("refuses a history whose call returns before it is made", () => {
    expect(() => checkPorcupineHistory({ operations: [{ index: 0, client: "r1", f: "ensure", id: "x", call: 100, return: 50, outcome: "ok", token: "#t" }] })).toThrow(/its return \(50\) is before its call \(100\)/);
  });
});
