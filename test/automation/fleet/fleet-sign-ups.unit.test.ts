// The record-first sign-up's logic without an engine (issue #44; fleet/sign-ups.ts):
// what the run record holds, the adoption's plan, and the fleet through its two
// seams, the shard runner (memory-shards.ts) and the sign-up seam (a lease, a
// record, a service and an adopting run kept in memory here). The engine-backed
// proof is fleet-fast-path.test.ts.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GroupSpec } from "../../../provider/automation/model";
import { adoptionPlan, createdEntryOf, type HeldShard, type SignUpSeam, UserGroupFleet } from "../../../provider/automation/fleet";
import type { CreatedEntry } from "../../../provider/automation/lease";
import { UserGroupsError } from "../../../provider/wire/errors";
import { MemoryShards } from "./memory-shards";

/** One shard's lease, record and service in memory; the adopting run puts the groups in the memory shards' state. */
class MemorySignUps implements SignUpSeam {
  record: CreatedEntry[] = [];
  /** The service: user group id -> token. */
  readonly service = new Map<string, string>();
  readonly refused = new Set<string>();
  leases = 0;
  held = false;
  readonly adopted: string[][] = [];
  /** Awaited before each adopting run. */
  adoptGate: Promise<void> | undefined;
  /** Told when an adopting run starts. */
  onAdopt: (() => void) | undefined;
  /** The record as each create saw it (durable before the request?). */
  readonly recordAtCreate: string[][] = [];

  constructor(private readonly shards: MemoryShards) {}

  /** Awaited before the lease is taken (another holder has it). */
  leaseGate: Promise<void> | undefined;
  /** Told when a session starts waiting for the lease. */
  onLeaseWait: (() => void) | undefined;

  async underLease<T>(shard: number, body: (held: HeldShard) => Promise<T>): Promise<T> {
    this.onLeaseWait?.();
    await this.leaseGate;
    expect(this.held).toBe(false); // one holder at a time
    this.held = true;
    this.leases += 1;
    try {
      return await body({
        epoch: 4,
        prove: (entry) => ({ ...entry, proof: "v1:in-memory" }),
        claim: async () => new Map(),
        record: async (change) => {
          this.record = change(this.record);
        },
        create: async (spec) => {
          this.recordAtCreate.push(this.record.map((entry) => entry.resourceName));
          if (this.refused.has(spec.userGroupId)) throw new UserGroupsError("user_group_exists", `"${spec.userGroupId}" exists`);
          const token = `token-of-${spec.userGroupId}`;
          this.service.set(spec.userGroupId, token);
          return { name: spec.name, token, teamId: 7 };
        },
        adopt: async (entries) => {
          this.onAdopt?.();
          await this.adoptGate;
          const state = this.shards.states.get(shard) ?? new Map();
          this.shards.states.set(shard, state);
          for (const entry of entries) {
            const inputs = entry.inputs as { name: string; userGroupId: string };
            state.set(entry.resourceName, { resourceName: entry.resourceName, userGroupId: inputs.userGroupId, name: inputs.name, mapping: {}, token: this.service.get(inputs.userGroupId)!, teamId: 7 });
          }
          const names = new Set(entries.map((entry) => entry.resourceName));
          this.record = this.record.filter((entry) => !names.has(entry.resourceName));
          this.adopted.push([...names]);
          return [...names];
        },
      });
    } finally {
      this.held = false;
    }
  }
}

const spec = (id: string, name = `${id} Inc`): GroupSpec => ({ name, userGroupId: id });
const nameOf = (id: string) => `default.${id}`;

describe("what the record holds", () => {
  it("a created entry: the inputs a program declares and the lease's epoch, never a token or anything else", () => {
    const entry = createdEntryOf("default.acme", { name: "Acme", userGroupId: "acme", properties: { plan: "team" }, mapping: { x: "y" } }, 12);
    expect(entry).toEqual({ resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme", properties: { plan: "team" }, mapping: { x: "y" } }, epoch: 12 });
    expect(createdEntryOf("default.b", { name: "B", userGroupId: "b" }, undefined)).toEqual({ resourceName: "default.b", inputs: { name: "B", userGroupId: "b" } });
  });

  it("the adoption takes the record's entries but those a run adopts already", () => {
    const record = [createdEntryOf("a", spec("a"), 1), createdEntryOf("b", spec("b"), 1)];
    expect(adoptionPlan(record, new Set(["a"])).map((entry) => entry.resourceName)).toEqual(["b"]);
    expect(adoptionPlan(record, new Set())).toHaveLength(2);
  });
});

describe("the fleet's record-first sign-ups", () => {
  let workDir: string;
  let shards: MemoryShards;
  let signUps: MemorySignUps;
  let fleet: UserGroupFleet;

  beforeEach(() => {
    workDir = mkdtempSync(path.join(tmpdir(), "fleet-sign-ups-"));
    mkdirSync(path.join(workDir, "state"), { mode: 0o700 });
    shards = new MemoryShards();
    signUps = new MemorySignUps(shards);
    fleet = new UserGroupFleet({ stack: "tenants", workDir, backendUrl: `file://${path.join(workDir, "state")}` }, shards, signUps);
  });
  afterEach(async () => {
    await fleet.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("answers with the service's token before any run, the group recorded first; one adopting run puts it in the state", async () => {
    let release!: () => void;
    signUps.adoptGate = new Promise<void>((resolve) => (release = resolve));
    const got = await fleet.ensure(spec("acme"));
    expect(got).toMatchObject({ change: "create", token: "token-of-acme" });
    expect(signUps.recordAtCreate).toEqual([[nameOf("acme")]]);
    expect(signUps.record.map((entry) => entry.resourceName)).toEqual([nameOf("acme")]);
    expect(shards.runs).toEqual([]);
    expect(fleet.engineRuns).toBe(0);
    // What list() adds to the states' groups at once (fleet-fast-path.test.ts reads them), and asked again answered from memory (no request, no run).
    expect(fleet.signUps!.listed().map((g) => [g.userGroupId, g.token])).toEqual([["acme", "token-of-acme"]]);
    expect(await fleet.ensure(spec("acme"))).toMatchObject({ change: "same", token: "token-of-acme" });
    expect(signUps.recordAtCreate).toHaveLength(1);
    release();
    await fleet.signUps!.idle(0);
    expect(signUps.record).toEqual([]);
    expect(signUps.adopted).toEqual([[nameOf("acme")]]);
    expect([...shards.states.get(0)!.keys()]).toEqual([nameOf("acme")]);
    expect(signUps.leases).toBe(1);
  });

  it("calls that arrive while the adopting run is under way are answered under the same lease, and adopted by the next run", async () => {
    let release!: () => void;
    signUps.adoptGate = new Promise<void>((resolve) => (release = resolve));
    const adopting = new Promise<void>((resolve) => (signUps.onAdopt = () => resolve()));
    await fleet.ensure(spec("acme"));
    await adopting;
    const later = await Promise.all([fleet.ensure(spec("globex")), fleet.ensure(spec("initech"))]);
    expect(later.map((r) => r.change)).toEqual(["create", "create"]);
    release();
    await fleet.signUps!.idle(0);
    expect(signUps.leases).toBe(1);
    expect(signUps.adopted).toEqual([[nameOf("acme")], [nameOf("globex"), nameOf("initech")]]);
    expect(signUps.record).toEqual([]);
  });

  it("calls that arrive while the lease is awaited join the batch that takes it: one lease, one record write before both creates", async () => {
    let free!: () => void;
    signUps.leaseGate = new Promise<void>((resolve) => (free = resolve));
    const waiting = new Promise<void>((resolve) => (signUps.onLeaseWait = () => resolve()));
    const first = fleet.ensure(spec("acme"));
    await waiting; // the first batch's session waits for the lease (the event, not a sleep)
    signUps.onLeaseWait = undefined;
    const second = fleet.ensure(spec("globex"));
    // The second call's batch reaches the waiting session (a batch window on the clock, then its state read).
    await new Promise<void>((resolve) => {
      const poll = () => (fleet.signUps!["sessions"].get(0)?.queue.length === 2 ? resolve() : setTimeout(poll, 5));
      poll();
    });
    free();
    expect((await Promise.all([first, second])).map((r) => r.change)).toEqual(["create", "create"]);
    expect(signUps.leases).toBe(1);
    expect(signUps.recordAtCreate).toEqual([
      [nameOf("acme"), nameOf("globex")],
      [nameOf("acme"), nameOf("globex")],
    ]);
  });

  it("a refused create leaves the record and goes the slow path alone; the others are answered", async () => {
    signUps.refused.add("taken");
    shards.refused.add(nameOf("taken"));
    const [taken, fresh] = await Promise.allSettled([fleet.ensure(spec("taken")), fleet.ensure(spec("fresh"))]);
    expect(fresh).toMatchObject({ status: "fulfilled", value: { change: "create", token: "token-of-fresh" } });
    expect(taken.status).toBe("rejected");
    expect(String((taken as PromiseRejectedResult).reason)).toMatch(/refused by the service/);
    // Only the refused one ran, after the adoption (the slow path), and nothing of it stays recorded.
    expect(shards.runs).toEqual([{ shard: 0, kind: "ensure", names: [nameOf("taken")] }]);
    expect(signUps.adopted).toEqual([[nameOf("fresh")]]);
    expect(signUps.record).toEqual([]);
  });

  it("a remove of a group not yet adopted waits for its adoption, then removes it", async () => {
    let release!: () => void;
    signUps.adoptGate = new Promise<void>((resolve) => (release = resolve));
    await fleet.ensure(spec("acme"));
    const removing = fleet.remove("acme");
    let removed = false;
    void removing.then(() => (removed = true));
    await Promise.resolve();
    expect(removed).toBe(false);
    release();
    expect(await removing).toMatchObject({ change: "delete" });
    expect(shards.runs.map((run) => run.kind)).toEqual(["remove"]);
    expect(shards.states.get(0)?.size).toBe(0);
    expect(fleet.signUps!.listed()).toEqual([]);
  });
});
