// A preview answered from the stack's state (unchanged-state.ts): taken only
// when the state proves that the engine would find nothing to change, and then
// the same result as the engine's; every other case goes to the engine. The
// pure judgement is tried on a real state with each way it can differ; the
// end-to-end cases compare with the engine itself (USER_GROUPS_PREVIEW_ENGINE=always).
import type { Deployment } from "@pulumi/pulumi/automation";
import { beforeAll, describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../../provider/client/http-client";
import {
  type GroupEvent,
  type GroupSpec,
  previewUserGroups,
  provisionUserGroups,
  refreshUserGroups,
  type RunOptions,
  type RunResult,
  WrongPassphraseError,
} from "../../../provider/automation";
import { exportIfExists } from "../../../provider/automation/engine/open-stack";
import { PREVIEW_ENGINE_ENV, proveUnchanged } from "../../../provider/automation/engine/state";
import { useStackFixture } from "../../support/stack-fixture";

const KEY = "preview-state-key-0001";
const { server, runOptions } = useStackFixture({ label: "preview-state", apiKeys: [KEY], passphrase: "preview-state" });

const SPECS: GroupSpec[] = [
  { name: "Alpha", userGroupId: "alpha" },
  { name: "Bravo", userGroupId: "bravo", mapping: { sales: "warehouse" }, properties: { region: "eu", seats: 3, tags: ["a", "b"], nested: { on: true, none: null } } },
  { name: "Charlie", userGroupId: "charlie", rotationTrigger: "2026-11", adoptExisting: true },
  { name: "Delta", userGroupId: "needs %encoding* here" },
];

function optionsOf(stack: string, extra: Partial<RunOptions> = {}): RunOptions {
  return runOptions(stack, extra);
}

/** A preview as a caller runs it, and whether it was answered from the state (its one output line says so). */
async function preview(options: RunOptions, groups: readonly GroupSpec[]) {
  const output: string[] = [];
  const events: GroupEvent[] = [];
  const result = await previewUserGroups({ ...options, groups, onOutput: (text) => output.push(text), onEvent: (event) => events.push(event) });
  const fromState = output.filter((text) => text.includes("from its state")).length;
  return { result, fromState, events, output: output.join("") };
}

/** The same preview with the engine run for every shard. */
function enginePreview(options: RunOptions, groups: readonly GroupSpec[]): Promise<RunResult> {
  return previewUserGroups({ ...options, envVars: { ...options.envVars, [PREVIEW_ENGINE_ENV]: "always" }, groups });
}

describe("a preview answered from the state", () => {
  let held: Deployment;
  const STACK = "judged";

  beforeAll(async () => {
    await provisionUserGroups({ ...optionsOf(STACK), groups: SPECS });
    held = (await exportIfExists(optionsOf(STACK)))!;
  }, 120_000);

  const edited = (edit: (resources: Array<Record<string, unknown>>, deployment: Record<string, unknown>) => void): Deployment => {
    const copy = structuredClone(held);
    const deployment = copy.deployment as Record<string, unknown>;
    edit(deployment.resources as Array<Record<string, unknown>>, deployment);
    return copy;
  };
  const group = (resources: Array<Record<string, unknown>>, id: string) => resources.find((r) => String(r.urn).endsWith(`::default.${id}`))!;
  const judged = (deployment: Deployment, specs: readonly GroupSpec[] = SPECS, stack = STACK) => proveUnchanged(deployment, stack, specs);

  it("proves the state an up left unchanged for the same groups, in any order, with one 'same' event per group", () => {
    const proof = judged(held, [...SPECS].reverse());
    expect(proof.unchanged).toBe(true);
    if (!proof.unchanged) return;
    expect(proof.events.map((e) => [e.resOutputsEvent?.metadata.op, e.resOutputsEvent?.metadata.urn.split("::").at(-1)])).toEqual(
      [...SPECS].reverse().map((s) => ["same", `default.${s.userGroupId.replace(/[%*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`]),
    );
    // What a user declares the same way twice: an absent mapping is {}, properties null is none.
    expect(judged(held, SPECS.map((s) => (s.userGroupId === "alpha" ? { ...s, mapping: {}, properties: null, adoptExisting: false } : s))).unchanged).toBe(true);
  });

  it("leaves to the engine every declared change: name, mapping, properties, rotation, profile, a group added or removed", () => {
    const changed = (id: string, change: Partial<GroupSpec>) => SPECS.map((s) => (s.userGroupId === id ? { ...s, ...change } : s));
    const cases: Array<[string, readonly GroupSpec[], RegExp]> = [
      ["name", changed("alpha", { name: "Alpha 2" }), /default\.alpha's inputs differ/],
      ["mapping", changed("bravo", { mapping: { sales: "lake" } }), /inputs differ/],
      ["properties", changed("bravo", { properties: { region: "eu", seats: 4, tags: ["a", "b"], nested: { on: true, none: null } } }), /inputs differ/],
      ["properties cleared", changed("bravo", { properties: null }), /inputs differ/],
      ["rotation", changed("charlie", { rotationTrigger: "2026-12" }), /inputs differ/],
      ["profile", changed("alpha", { profile: "eu" }), /not in the state/],
      // adoptExisting changes nothing once a group is held, but the engine would store it: not proven.
      ["adoptExisting", changed("charlie", { adoptExisting: false }), /inputs differ/],
      ["added", [...SPECS, { name: "Echo", userGroupId: "echo" }], /holds 6 resources, the program would declare 7/],
      ["removed", SPECS.slice(1), /holds 6 resources, the program would declare 5/],
      ["swapped", [...SPECS.slice(1), { name: "Echo", userGroupId: "echo" }], /default\.echo is not in the state/],
    ];
    for (const [label, specs, why] of cases) {
      const proof = judged(held, specs);
      expect(proof.unchanged, label).toBe(false);
      if (!proof.unchanged) expect(proof.why, label).toMatch(why);
    }
  });

  it("leaves to the engine a state that differs in anything else: outputs, options, flags, pending operations, other stacks, unknown fields", () => {
    const cases: Array<[string, Deployment, RegExp]> = [
      ["an output renamed by a refresh", edited((rs) => void ((group(rs, "alpha").outputs as Record<string, unknown>).name = "Renamed elsewhere")), /differs from its outputs/],
      ["properties changed outside", edited((rs) => void ((group(rs, "bravo").outputs as Record<string, unknown>).properties = { region: "us" })), /differs from its outputs/],
      ["a secret name", edited((rs) => void ((group(rs, "alpha").outputs as Record<string, unknown>).name = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", plaintext: '"Alpha"' })), /differs from its outputs/],
      ["protect", edited((rs) => void (group(rs, "alpha").protect = true)), /protect/],
      ["marked for deletion", edited((rs) => void (group(rs, "alpha").delete = true)), /delete/],
      ["pending replacement", edited((rs) => void (group(rs, "alpha").pendingReplacement = true)), /pendingReplacement/],
      ["tainted", edited((rs) => void (group(rs, "alpha").taint = true)), /taint/],
      ["retained on delete", edited((rs) => void (group(rs, "alpha").retainOnDelete = true)), /retainOnDelete/],
      ["ignoreChanges", edited((rs) => void (group(rs, "alpha").ignoreChanges = ["name"])), /ignoreChanges/],
      ["an init error", edited((rs) => void (group(rs, "alpha").initErrors = ["boom"])), /initErrors/],
      ["a dependency", edited((rs) => void (group(rs, "alpha").dependencies = [String(group(rs, "bravo").urn)])), /dependencies/],
      ["no secret token", edited((rs) => void (group(rs, "alpha").additionalSecretOutputs = [])), /additionalSecretOutputs/],
      ["another provider", edited((rs) => void (group(rs, "alpha").provider = `${String(group(rs, "alpha").provider)}x`)), /another parent or provider/],
      ["provider inputs", edited((rs) => void (rs.find((r) => r.type === "pulumi:providers:pulumi-nodejs")!.inputs = { version: "9.9.9" })), /provider resource/],
      ["an extra resource", edited((rs) => void rs.push({ ...group(rs, "alpha"), urn: `${String(group(rs, "alpha").urn)}-extra` })), /holds 7 resources/],
      ["a pending create", edited((_, d) => void (d.pending_operations = [{ resource: group(d.resources as Array<Record<string, unknown>>, "alpha"), type: "creating" }])), /pending_operations/],
      ["an unknown deployment field", edited((_, d) => void (d.somethingNew = 1)), /somethingNew/],
      ["an unknown resource field", edited((rs) => void (group(rs, "alpha").hooks = {})), /hooks/],
    ];
    for (const [label, deployment, why] of cases) {
      const proof = judged(deployment);
      expect(proof.unchanged, label).toBe(false);
      if (!proof.unchanged) expect(proof.why, label).toMatch(why);
    }
    expect(judged({ ...held, version: 4 }).unchanged).toBe(false);
    // The same state read as another stack's (its URNs name this one).
    expect(judged(held, SPECS, "other").unchanged).toBe(false);
    // The untouched copy still proves it: the cases above changed only their copies.
    expect(judged(structuredClone(held)).unchanged).toBe(true);
  });

  it("gives the engine's result without running it; a change, and a drift a refresh recorded, go to the engine", async () => {
    const fast = await preview(optionsOf(STACK), SPECS);
    expect(fast.fromState).toBe(1);
    expect(fast.result.summary).toEqual({ create: 0, update: 0, replace: 0, delete: 0, same: 4 });
    expect(fast.result.changed).toBe(false);
    expect(fast.result).toEqual(await enginePreview(optionsOf(STACK), SPECS));
    expect(fast.events.map((e) => `${e.resourceName}:${e.phase}:${e.change}`).sort()).toEqual(
      ["default.alpha", "default.bravo", "default.charlie", "default.needs %25encoding%2A here"].map((n) => `${n}:done:same`),
    );

    const renamed = SPECS.map((s) => (s.userGroupId === "alpha" ? { ...s, name: "Alpha 2" } : s));
    const declared = await preview(optionsOf(STACK), renamed);
    // Gone to the engine (no line "from its state"): its result is the engine's own, as the engine found the change.
    expect(declared.fromState).toBe(0);
    expect(declared.result.summary).toEqual({ create: 0, update: 1, replace: 0, delete: 0, same: 3 });
    expect(declared.result.groups.find((g) => g.userGroupId === "alpha")).toMatchObject({ change: "update", changedFields: ["name"] });

    // Renamed on the service, and a refresh wrote that name into the state: the declared one now differs from it.
    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    await operator.update({ user_group_id: "bravo", name: "Bravo by hand" });
    await refreshUserGroups(optionsOf(STACK));
    const drifted = await preview(optionsOf(STACK), SPECS);
    expect(drifted.fromState).toBe(0);
    expect(drifted.result.groups.find((g) => g.userGroupId === "bravo")).toMatchObject({ change: "update", changedFields: ["name"] });
    expect(drifted.result.summary).toEqual({ create: 0, update: 1, replace: 0, delete: 0, same: 3 });
  }, 180_000);

  it("fails on a wrong passphrase as the engine does", async () => {
    const wrong = optionsOf(STACK, { passphrase: "not the passphrase" });
    const fast = await preview(wrong, SPECS).then(() => undefined, (e: unknown) => e);
    const engine = await enginePreview(wrong, SPECS).then(() => undefined, (e: unknown) => e);
    expect(fast).toBeInstanceOf(WrongPassphraseError);
    expect(engine).toBeInstanceOf(WrongPassphraseError);
    expect((fast as Error).message).toBe((engine as Error).message);
  }, 120_000);
});

describe("a sharded preview answered from the state where it can be", () => {
  it("answers the untouched shards from their state and runs the engine for the others; the merged result is the engine's", async () => {
    const options = optionsOf("sharded", { shardSize: 2 });
    const groups: GroupSpec[] = Array.from({ length: 6 }, (_, i) => ({ name: `Shard group ${i}`, userGroupId: `sg-${i}` }));
    await provisionUserGroups({ ...options, groups });

    const unchanged = await preview(options, groups);
    expect(unchanged.fromState).toBe(3);
    expect(unchanged.result.summary.same).toBe(6);
    expect(unchanged.result).toEqual(await enginePreview(options, groups));

    // One shard changes a name, a new group plans a new shard: two shards to the engine, two from the state.
    const next = [...groups.map((g) => (g.userGroupId === "sg-3" ? { ...g, name: "Renamed" } : g)), { name: "New", userGroupId: "sg-new" }];
    const mixed = await preview(options, next);
    expect(mixed.fromState).toBe(2);
    expect(mixed.result.summary).toEqual({ create: 1, update: 1, replace: 0, delete: 0, same: 5 });
    expect(mixed.result).toEqual(await enginePreview(options, next));
  }, 240_000);
});
