// UserGroupFleet's own logic without an engine (issue #43 item 3): the fleet is
// a batcher (queue, batches, per-caller isolation, answers), and its seam
// (fleet/shard-runner.ts, the shard runner it is given) lets it run here on
// shards kept in memory. The shard directory is the real one, in a file backend
// of a temporary directory. The engine-backed fleet tests (fleet.test.ts and the
// others of this folder) still prove the real runs.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GroupSpec } from "../../../provider/automation/model";
import { FleetGroupError, UserGroupFleet } from "../../../provider/automation/fleet";
import { MAX_MOVES } from "../../../provider/automation/fleet/answers";
import { MemoryShards } from "./memory-shards";

let workDir: string;
let shards: MemoryShards;
let fleet: UserGroupFleet;

beforeEach(() => {
  workDir = mkdtempSync(path.join(tmpdir(), "fleet-batcher-"));
  mkdirSync(path.join(workDir, "state"), { mode: 0o700 });
  shards = new MemoryShards();
  fleet = new UserGroupFleet({ stack: "tenants", workDir, backendUrl: `file://${path.join(workDir, "state")}` }, shards);
});
afterEach(async () => {
  await fleet.close();
  rmSync(workDir, { recursive: true, force: true });
});

const spec = (id: string, name = `${id} Inc`): GroupSpec => ({ name, userGroupId: id });
const nameOf = (id: string) => `default.${id}`;

describe("batching", () => {
  it("ensures made together join one batch: one run of all their groups, each caller its own group's answer", async () => {
    const ids = ["acme", "globex", "initech"];
    const results = await Promise.all(ids.map((id) => fleet.ensure(spec(id))));
    expect(shards.runs).toEqual([{ shard: 0, kind: "ensure", names: ids.map(nameOf) }]);
    expect(fleet.engineRuns).toBe(1);
    expect(results.map((r) => [r.userGroupId, r.change, r.token])).toEqual(ids.map((id) => [id, "create", `token-of-${id}`]));
  });

  it("calls made while a run is under way wait for it, then share the next run; a group held as asked costs no run", async () => {
    let release!: () => void;
    shards.gate = new Promise<void>((resolve) => (release = resolve));
    const started = new Promise<void>((resolve) => (shards.onRun = () => resolve()));
    const first = fleet.ensure(spec("acme"));
    await started; // the first batch's run is under way (the event, not a sleep)
    shards.onRun = undefined;
    const later = [fleet.ensure(spec("globex")), fleet.ensure(spec("initech")), fleet.ensure(spec("umbrella"))];
    release();
    await Promise.all([first, ...later]);
    expect(shards.runs.map((run) => run.names)).toEqual([[nameOf("acme")], ["globex", "initech", "umbrella"].map(nameOf)]);
    // Asked again as held: answered from the state, no run.
    shards.gate = undefined;
    expect(await fleet.ensure(spec("globex"))).toMatchObject({ change: "same", token: "token-of-globex" });
    expect(fleet.engineRuns).toBe(2);
    // Asked with other fields: a run, "update".
    expect(await fleet.ensure(spec("globex", "Globex Corp"))).toMatchObject({ change: "update" });
    expect(fleet.engineRuns).toBe(3);
  });

  it("an ensure and a remove of one group are never in one batch: each runs in the order asked", async () => {
    await fleet.ensure(spec("acme"));
    const [removed, again] = await Promise.all([fleet.remove("acme"), fleet.ensure(spec("acme"))]);
    expect(removed.change).toBe("delete");
    expect(again.change).toBe("create");
    expect(shards.runs.map((run) => run.kind)).toEqual(["ensure", "remove", "ensure"]);
  });
});

describe("per-caller isolation", () => {
  it("one caller's refused input fails that call only, with an error that names no other group of its run", async () => {
    shards.refused.add(nameOf("initech"));
    const outcomes = await Promise.allSettled(["acme", "globex", "initech"].map((id) => fleet.ensure(spec(id))));
    expect(shards.runs).toHaveLength(1);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    const error = (outcomes[2] as PromiseRejectedResult).reason as FleetGroupError;
    expect(error).toBeInstanceOf(FleetGroupError);
    expect(error.code).toBe("fleet_group_failed");
    expect(error.message).toContain('name "initech Inc" refused');
    expect(error.message).not.toMatch(/acme|globex/);
    expect(error.message).toContain("[another group]");
  });

  it("a run failed for no single group is halved until the culprit runs alone: the others' calls succeed", async () => {
    shards.poisonous.add(nameOf("initech"));
    const ids = ["acme", "globex", "initech", "umbrella"];
    const outcomes = await Promise.allSettled(ids.map((id) => fleet.ensure(spec(id))));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: "fleet_group_failed", message: expect.stringMatching(/failed with this group alone/) });
    // All four, then halves (the clean half settles), then the culprit's half halved: the culprit alone fails.
    expect(shards.runs.map((run) => run.names)).toEqual([ids.map(nameOf), ["acme", "globex"].map(nameOf), ["initech", "umbrella"].map(nameOf), [nameOf("initech")], [nameOf("umbrella")]]);
  });
});

describe("a group moved to another shard meanwhile", () => {
  it("is followed to the shard the directory names now, and created there", async () => {
    shards.moving.set(nameOf("acme"), 2);
    const result = await fleet.ensure(spec("acme"));
    expect(result).toMatchObject({ change: "create", token: "token-of-acme" });
    expect(shards.runs.map((run) => run.shard)).toEqual([0, 1, 2]);
    expect(shards.states.get(2)?.has(nameOf("acme"))).toBe(true);
  });

  it(`is followed at most ${MAX_MOVES} times, then the call fails with shard_directory_conflict (retryable: nothing was created)`, async () => {
    expect(MAX_MOVES).toBe(3);
    shards.moving.set(nameOf("acme"), Number.POSITIVE_INFINITY);
    const [moved, other] = await Promise.allSettled([fleet.ensure(spec("acme")), fleet.ensure(spec("globex"))]);
    expect(other.status).toBe("fulfilled");
    expect(moved.status).toBe("rejected");
    expect((moved as PromiseRejectedResult).reason).toMatchObject({ code: "shard_directory_conflict", message: expect.stringMatching(/kept moving between shards.*ask again/) });
    // The first try and three follows, each on the shard the directory named then.
    expect(shards.runs.filter((run) => run.names.includes(nameOf("acme"))).map((run) => run.shard)).toEqual([0, 1, 2, 3]);
    expect([...shards.states.values()].some((state) => state.has(nameOf("acme")))).toBe(false);
  });
});
