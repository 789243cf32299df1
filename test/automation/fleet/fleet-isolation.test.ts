// CONTRACT F5: each caller of a fleet batch its own outcome, even when the
// engine fails a run for a reason it charges to no single group; an error a
// caller gets names no other tenant. And the defence in depth of F1: a targeted
// run whose events touch a group outside its batch is stopped and fails loudly.
import { inspect } from "node:util";
import path from "node:path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { describe, expect, it, vi } from "vitest";
import { type GroupOutcome, isolationBudget, othersScrubber, type RunAttempt, scrubbedCopy, settleEach } from "../../../provider/automation/fleet/fleet-isolation";
import { FleetGroupError } from "../../../provider/automation";
import { slowPathFleet } from "../../../provider/automation/internal";
import { assertWithinBatch, ChangeTracker, OutsideBatchError } from "../../../provider/automation/engine/change-tracker";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";
import { UserGroupsError } from "../../../provider/wire/errors";
import { useStackFixture } from "../../support/stack-fixture";

/** The seam: the fleet's program throws while declaring this id, a failure the engine charges to the run, not to a group. */
const POISON = "poisoned-tenant";
vi.mock("../../../provider/automation/engine/program", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../../provider/automation/engine/program")>();
  return {
    ...actual,
    declareGroup: (spec: Parameters<typeof actual.declareGroup>[0]) => {
      if (spec.userGroupId === POISON) throw new Error(`the program cannot declare ${POISON}`);
      return actual.declareGroup(spec);
    },
  };
});

/** A synthetic run: settles the names `settle` accepts, and fails whole (nothing settled) when any name `poisons` it. */
function syntheticRuns(poisoned: ReadonlySet<string>, options: { failAlways?: boolean } = {}) {
  const runs: string[][] = [];
  const attempt = async (names: readonly string[]): Promise<RunAttempt<string>> => {
    runs.push([...names]);
    const failed = options.failAlways === true || names.some((name) => poisoned.has(name));
    if (failed) return { settled: new Map(), failure: { error: new Error(`run of ${names.join(",")} failed`), lines: ["program failed"] } };
    return { settled: new Map(names.map((name) => [name, { ok: true, value: `group ${name}` }])) };
  };
  return { runs, attempt };
}

async function settleAll(names: readonly string[], attempt: (names: readonly string[]) => Promise<RunAttempt<string>>) {
  const outcomes = new Map<string, GroupOutcome<string>>();
  await settleEach(names, attempt, {
    unsettledError: (name, failure, alone) => new Error(`${name} ${alone ? "alone" : "gave up"}: ${failure?.lines.join(";")}`),
    onSettled: (name, outcome) => {
      expect(outcomes.has(name), `${name} settled twice`).toBe(false);
      outcomes.set(name, outcome);
    },
  });
  return outcomes;
}

describe("settleEach: isolating a run-level failure", () => {
  it("finds one culprit among 8 by halving: the 7 others succeed, in 1 + 2·3 runs", async () => {
    const names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    const { runs, attempt } = syntheticRuns(new Set(["f"]));
    const outcomes = await settleAll(names, attempt);
    for (const name of names.filter((n) => n !== "f")) expect(outcomes.get(name)).toEqual({ ok: true, value: `group ${name}` });
    expect(outcomes.get("f")).toMatchObject({ ok: false, error: new Error("f alone: program failed") });
    expect(runs.length).toBe(7);
    expect(runs.at(-1)).toEqual(["f"]);
  });

  it("finds two culprits in different halves", async () => {
    const { attempt } = syntheticRuns(new Set(["a", "h"]));
    const outcomes = await settleAll(["a", "b", "c", "d", "e", "f", "g", "h"], attempt);
    expect([...outcomes].filter(([, o]) => !o.ok).map(([name]) => name)).toEqual(["a", "h"]);
    expect([...outcomes.values()].filter((o) => o.ok)).toHaveLength(6);
  });

  it("runs the rest again when the failed run settled some groups (no halving needed)", async () => {
    const runs: string[][] = [];
    const outcomes = await settleAll(["a", "b", "c"], async (names) => {
      runs.push([...names]);
      // The first run gets a and b done, then fails; the second succeeds.
      if (runs.length === 1) return { settled: new Map([["a", { ok: true, value: "A" }], ["b", { ok: false, error: new Error("b's own") }]]), failure: { error: new Error("x"), lines: [] } };
      return { settled: new Map(names.map((name) => [name, { ok: true, value: name.toUpperCase() }])) };
    });
    expect(runs).toEqual([["a", "b", "c"], ["c"]]);
    expect(outcomes.get("a")).toEqual({ ok: true, value: "A" });
    expect(outcomes.get("b")).toMatchObject({ ok: false });
    expect(outcomes.get("c")).toEqual({ ok: true, value: "C" });
  });

  it("gives up after its budget when every run fails (a backend down), not after one run per group", async () => {
    const names = Array.from({ length: 32 }, (_, i) => `g${i}`);
    const { runs, attempt } = syntheticRuns(new Set(), { failAlways: true });
    const outcomes = await settleAll(names, attempt);
    expect(isolationBudget(32)).toBe(11);
    expect(runs.length).toBe(11);
    expect(outcomes.size).toBe(32);
    expect([...outcomes.values()].every((o) => !o.ok)).toBe(true);
  });
});

describe("an error a caller gets names no other tenant", () => {
  const others = [
    { userGroupId: "acme", resourceName: "default.acme", urn: "urn:pulumi:s::user-groups::t::default.acme" },
    { userGroupId: "*", resourceName: "default.%2A", urn: "urn:pulumi:s::user-groups::t::default.%2A" },
  ];

  it("scrubs ids standing whole, resource names and URNs; keeps ids that only contain them", () => {
    const scrub = othersScrubber(others);
    expect(scrub("target urn:pulumi:s::user-groups::t::default.acme and default.%2A failed; 'acme' too; acme-corp and acmes stay; * also")).toBe(
      "target [another group] and [another group] failed; '[another group]' too; acme-corp and acmes stay; [another group] also",
    );
  });

  it("copies an error with its class, fields and causes, leaving the original as it was", () => {
    class CommandLike extends Error {
      commandResult = { stdout: "+ default.acme created", stderr: "--target urn:pulumi:s::user-groups::t::default.acme", code: 1 };
    }
    const cause = new CommandLike("pulumi up failed: default.acme");
    const original = new FleetGroupError("default.mine", "failed beside acme", { cause });
    const copy = scrubbedCopy(original, othersScrubber(others));
    expect(copy).toBeInstanceOf(FleetGroupError);
    expect(copy).toBeInstanceOf(UserGroupsError);
    expect(copy.code).toBe("fleet_group_failed");
    expect(copy.resourceName).toBe("default.mine");
    expect(inspect(copy, { depth: 10 })).not.toMatch(/acme/);
    expect(copy.cause).toBeInstanceOf(CommandLike);
    expect((copy.cause as CommandLike).commandResult).toEqual({ stdout: "+ [another group] created", stderr: "--target [another group]", code: 1 });
    expect(original.message).toContain("acme");
    expect(cause.commandResult.stdout).toContain("default.acme");
  });
});

describe("a targeted run that touches a group outside its batch", () => {
  const urn = (name: string) => `urn:pulumi:customers::user-groups::${USER_GROUP_TYPE}::${name}`;
  const step = (kind: "resourcePreEvent" | "resOutputsEvent", name: string, op: string): EngineEvent =>
    ({ sequence: 0, timestamp: 0, [kind]: { metadata: { op, urn: urn(name), type: USER_GROUP_TYPE, provider: "" } } }) as unknown as EngineEvent;

  it("is recorded, stopped through the run's signal, and fails with an OutsideBatchError that names no group", () => {
    const tracker = new ChangeTracker(undefined, { batch: new Set(["default.%2A"]) });
    tracker.handle(step("resourcePreEvent", "default.%2A", "create"));
    tracker.handle(step("resOutputsEvent", "default.%2A", "create"));
    tracker.handle(step("resourcePreEvent", "default.other", "same")); // untouched: fine
    expect(tracker.signal.aborted).toBe(false);
    expect(() => assertWithinBatch(tracker, "up", "customers")).not.toThrow();
    tracker.handle(step("resourcePreEvent", "default.acme", "delete"));
    tracker.handle(step("resourcePreEvent", "default.globex", "update"));
    expect(tracker.signal.aborted).toBe(true);
    expect(tracker.outsideBatch).toEqual([urn("default.acme"), urn("default.globex")]);
    let error: unknown;
    try {
      assertWithinBatch(tracker, "up", "customers");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutsideBatchError);
    expect(error).toBeInstanceOf(UserGroupsError);
    expect((error as OutsideBatchError).code).toBe("run_outside_batch");
    expect((error as OutsideBatchError).urns).toEqual([urn("default.acme"), urn("default.globex")]);
    expect((error as Error).message).toMatch(/targeted up of stack "customers" touched 2 groups outside its batch, so it was stopped/);
    expect((error as Error).message).not.toMatch(/acme|globex/);
  });

  it("is not checked for a whole-set run (no batch given)", () => {
    const tracker = new ChangeTracker();
    tracker.handle(step("resourcePreEvent", "default.acme", "delete"));
    expect(tracker.outsideBatch).toEqual([]);
    expect(tracker.signal.aborted).toBe(false);
  });
});

describe("UserGroupFleet: one poisoned spec in a batch of good ones", () => {
  const { server, env, runOptions } = useStackFixture({ label: "isolation", apiKeys: ["isolation-customer-key-01"], passphrase: "isolation-test" });

  it("gives every good caller its group and only the poisoned caller an error naming no one else", async () => {
    // The engine-run path's isolation (the record-first path sends a new group's create itself and never runs the program
    // for it before answering; its adopting run's failure leaves the entries to the next holder): slowPathFleet.
    const fleet = slowPathFleet(runOptions("isolation", { workDir: path.join(env.workDir, "fleet"), batchWindowMs: 200 }));
    const good = ["good-tenant-1", "good-tenant-2", "good-tenant-3", "good-tenant-4", "good-tenant-5"];
    try {
      // One batch: the poisoned spec in the middle, so some good groups are declared before the program fails and some after.
      const ids = [...good.slice(0, 2), POISON, ...good.slice(2)];
      const settled = await Promise.allSettled(ids.map((id) => fleet.ensure({ name: `${id} Inc`, userGroupId: id })));
      for (const [i, id] of ids.entries()) {
        if (id === POISON) continue;
        expect(settled[i], id).toMatchObject({ status: "fulfilled", value: { userGroupId: id, change: "create", name: `${id} Inc` } });
        const token = (settled[i] as PromiseFulfilledResult<{ token: string }>).value.token;
        expect(token).toBe(server.groups().find((g) => g.user_group_id === id)?.token);
      }
      const poisoned = settled[ids.indexOf(POISON)]!;
      expect(poisoned.status).toBe("rejected");
      const error = (poisoned as PromiseRejectedResult).reason as FleetGroupError;
      expect(error).toBeInstanceOf(FleetGroupError);
      expect(error.message).toMatch(/^User group "default\.poisoned-tenant": the engine's run failed with this group alone, for a reason it charged to no group: .*cannot declare poisoned-tenant/s);
      // Not in the message, not in its causes, not in Pulumi's captured output.
      expect(inspect(error, { depth: 12 })).not.toMatch(/good-tenant/);
      // Isolation took more runs than one, and few: the batch, its halves, down to the culprit.
      expect(fleet.engineRuns).toBeGreaterThan(1);
      expect(fleet.engineRuns).toBeLessThanOrEqual(2 * isolationBudget(ids.length));
      expect(server.groups().map((g) => g.user_group_id).sort()).toEqual(good);
      expect((await fleet.list()).map((g) => g.userGroupId)).toEqual(good);
      console.log(`isolation: ${ids.length} specs, 1 poisoned: ${fleet.engineRuns} engine runs`);
    } finally {
      await fleet.close();
    }
  });
});
