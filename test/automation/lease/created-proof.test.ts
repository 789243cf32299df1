// Issue #44 item 1: a run record's `created` entries (a fleet's record-first
// sign-ups, not yet in the state) are adopted by a takeover only with a proof
// under the stack's own secret (provider/automation/lease/created-proof.ts).
// Whoever can write the backend can write the record: the attacks themselves
// are tried here, against the real takeover of a file backend's stack: an entry
// planted without a proof, a proven entry tampered with, and a proven entry of
// another stack (same passphrase) replayed onto this one. Each is refused with
// its coded line, dropped from the record, and nothing is declared or created
// for it; a genuine proven entry beside them is adopted.
import { pbkdf2Sync } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { provisionUserGroups, recoverStack, type TakeoverReport, UserGroupFleet } from "../../../provider/automation";
import { canonicalJson, checkCreatedEntries, createdProofKey, provenEntry, unprovenWhy } from "../../../provider/automation/lease";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "created-proof-key-0001";
const PASSPHRASE = "created-proof";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("created-proof");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("the proof of a record's created entry", () => {
  const secret = Buffer.alloc(32, 7);
  const key = createdProofKey(secret, "fleet.shard-1");
  const entry = { resourceName: "default.g1", inputs: { userGroupId: "g1", name: "G 1", mapping: { a: "b" } }, epoch: 3 };

  it("proves the entry its holder made, whatever order its inputs' keys come back in (PostgreSQL's jsonb)", () => {
    const proven = provenEntry(key, entry);
    expect(proven.proof).toMatch(/^v1:[A-Za-z0-9_-]{43}$/);
    expect(unprovenWhy(key, proven)).toBeUndefined();
    const reordered = { ...proven, inputs: { mapping: { a: "b" }, name: "G 1", userGroupId: "g1" } };
    expect(unprovenWhy(key, reordered)).toBeUndefined();
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
  });

  it("refuses an entry planted without a proof, or with one made up", () => {
    expect(unprovenWhy(key, entry)).toMatch(/no proof/);
    expect(unprovenWhy(key, { ...entry, proof: "v1:" + Buffer.alloc(32).toString("base64url") })).toMatch(/does not match/);
    expect(unprovenWhy(key, { ...entry, proof: "v1:short" })).toMatch(/does not match/);
  });

  it("refuses a proven entry tampered with: its name, its inputs, its epoch", () => {
    const proven = provenEntry(key, entry);
    expect(unprovenWhy(key, { ...proven, resourceName: "default.victim" })).toMatch(/does not match/);
    expect(unprovenWhy(key, { ...proven, inputs: { ...proven.inputs, name: "Taken over" } })).toMatch(/does not match/);
    expect(unprovenWhy(key, { ...proven, inputs: { ...proven.inputs, adoptExisting: true } })).toMatch(/does not match/);
    expect(unprovenWhy(key, { ...proven, epoch: 4 })).toMatch(/does not match/);
    const { epoch: _epoch, ...withoutEpoch } = proven;
    expect(unprovenWhy(key, withoutEpoch)).toMatch(/does not match/);
  });

  it("refuses an entry replayed onto another stack (the same passphrase's secret), or proven with another secret", () => {
    const proven = provenEntry(key, entry);
    expect(unprovenWhy(createdProofKey(secret, "fleet.shard-2"), proven)).toMatch(/does not match/);
    expect(unprovenWhy(createdProofKey(Buffer.alloc(32, 8), "fleet.shard-1"), proven)).toMatch(/does not match/);
  });

  it("refuses every entry of a stack whose secrets manager gives no key (not the passphrase one)", () => {
    const { proven, refused } = checkCreatedEntries(undefined, [provenEntry(key, entry)]);
    expect(proven).toEqual([]);
    expect(refused[0]!.why).toMatch(/not the passphrase one/);
  });
});

function fleetOf(stack: string, extra: { onTakeover?: (report: TakeoverReport) => void; onOutput?: (text: string) => void } = {}): UserGroupFleet {
  return new UserGroupFleet({
    stack,
    backendUrl: `file://${env.backendDir}`,
    workDir: path.join(env.workDir, stack),
    passphrase: PASSPHRASE,
    lockTimeoutMs: 20_000,
    envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    ...extra,
  });
}

const checkpointOf = (stack: string) => path.join(env.backendDir, ".pulumi", "stacks", "user-groups", `${stack}.json`);
const leaseDirOf = (stack: string) => path.join(env.backendDir, ".user-groups", "leases", "user-groups", stack);

function latestLease(stack: string): { generation: number; record: Record<string, unknown> } {
  const generation = Math.max(...readdirSync(leaseDirOf(stack)).map((name) => Number(/^lease-(\d+)\.json$/.exec(name)?.[1] ?? -1)));
  return { generation, record: JSON.parse(readFileSync(path.join(leaseDirOf(stack), `lease-${generation}.json`), "utf8")) as Record<string, unknown> };
}

/**
 * The stack's proof key as the product must derive it, worked out here on its own: PBKDF2 of the passphrase with a salt of
 * the package and the stack's name (not the checkpoint's, which another replica's run may rewrite), then HKDF with the
 * stack's name.
 */
function proofKeyOfStack(stack: string): Buffer {
  const checkpoint = JSON.parse(readFileSync(checkpointOf(stack), "utf8")) as { checkpoint: { latest: { secrets_providers: { type: string } } } };
  expect(checkpoint.checkpoint.latest.secrets_providers.type).toBe("passphrase");
  return createdProofKey(pbkdf2Sync(PASSPHRASE, `pulumi-user-groups run record proofs\u0000${stack}`, 1_000_000, 32, "sha256"), stack);
}

describe("a takeover meeting created entries in the run record", () => {
  it("adopts a proven one and refuses the planted, the tampered and the replayed ones (coded, dropped, nothing declared or created)", async () => {
    for (const [stack, id] of [["proof-a", "mine-1"], ["proof-b", "other-1"]] as const) {
      const fleet = fleetOf(stack);
      await fleet.ensure({ name: `Group ${id}`, userGroupId: id }).finally(() => fleet.close());
    }
    const keyA = proofKeyOfStack("proof-a");
    const keyB = proofKeyOfStack("proof-b");
    const genuine = provenEntry(keyA, { resourceName: "default.mine-2", inputs: { name: "Mine 2", userGroupId: "mine-2" } });
    const planted = { resourceName: "default.victim-1", inputs: { name: "Planted", userGroupId: "victim-1" } };
    const tampered = { ...provenEntry(keyA, { resourceName: "default.victim-2", inputs: { name: "Harmless", userGroupId: "victim-2" } }), inputs: { name: "Tampered", userGroupId: "victim-2" } };
    const replayed = provenEntry(keyB, { resourceName: "default.other-2", inputs: { name: "Other 2", userGroupId: "other-2" } });

    // The planted record: a newer lease generation, released, its created list holding all four.
    const { generation, record } = latestLease("proof-a");
    const written = { ...record, runId: "planted-run", released: true, unfinished: [], adopt: [], created: [genuine, planted, tampered, replayed] };
    writeFileSync(path.join(leaseDirOf("proof-a"), `lease-${generation + 1}.json`), JSON.stringify(written), { mode: 0o600 });

    const takeovers: TakeoverReport[] = [];
    let output = "";
    const fleet = fleetOf("proof-a", { onTakeover: (report) => takeovers.push(report), onOutput: (text) => void (output += text) });
    try {
      expect((await fleet.ensure({ name: "Mine 3", userGroupId: "mine-3" })).change).toBe("create");
      expect(takeovers).toHaveLength(1);
      expect(takeovers[0]!.adopted).toEqual(["default.mine-2"]);
      for (const [name, why] of [
        ["default.victim-1", "it carries no proof"],
        ["default.victim-2", "its proof does not match it"],
        ["default.other-2", "its proof does not match it"],
      ] as const) {
        expect(output).toContain(`[run_record_entry_unproven] Not adopting "${name}" listed as created in the run record of stack "proof-a": ${why}`);
      }
      // Nothing was made for the refused ones; the genuine one is in the state with the service's token.
      const ids = server.groups().map((g) => g.user_group_id).sort();
      expect(ids).toEqual(["mine-1", "mine-2", "mine-3", "other-1"]);
      const listed = await fleet.list();
      expect(listed.map((g) => g.userGroupId)).toEqual(["mine-1", "mine-2", "mine-3"]);
      expect(listed.find((g) => g.userGroupId === "mine-2")?.token).toBe(server.groups().find((g) => g.user_group_id === "mine-2")?.token);
      // Dropped from the record: nothing left to refuse again (and mine-3, answered record-first, adopted by then).
      await fleet.signUps?.closeAll();
      expect(latestLease("proof-a").record["created"] ?? []).toEqual([]);
    } finally {
      await fleet.close();
    }
  }, 240_000);
});

describe("recover meeting created entries in the run record", () => {
  it("adopts a proven one (the group the fleet made, its token kept) and refuses a planted one", async () => {
    const options = {
      stack: "proof-c",
      workDir: path.join(env.workDir, "proof-c"),
      backendUrl: `file://${env.backendDir}`,
      passphrase: PASSPHRASE,
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    };
    await provisionUserGroups({ ...options, groups: [{ name: "Mine 1", userGroupId: "c-mine-1" }] });
    // What a fleet's sign-up leaves when its replica dies before adopting: the group on the service, its proven entry in the record.
    const [made] = server.seed([{ name: "Mine 2", user_group_id: "c-mine-2" }]);
    // Someone else's group, and an entry planted to take it over.
    const [theirs] = server.seed([{ name: "Theirs", user_group_id: "c-theirs" }]);
    const genuine = provenEntry(proofKeyOfStack("proof-c"), { resourceName: "default.c-mine-2", inputs: { name: "Mine 2", userGroupId: "c-mine-2" } });
    const planted = { resourceName: "default.c-theirs", inputs: { name: "Mine now", userGroupId: "c-theirs" } };
    const { generation, record } = latestLease("proof-c");
    writeFileSync(path.join(leaseDirOf("proof-c"), `lease-${generation + 1}.json`), JSON.stringify({ ...record, runId: "planted-run", released: true, created: [genuine, planted] }), { mode: 0o600 });

    let output = "";
    const report = await recoverStack({ ...options, groups: [{ name: "Mine 1", userGroupId: "c-mine-1" }, { name: "Mine 2", userGroupId: "c-mine-2" }], onOutput: (text) => void (output += text) });
    expect(report.adopted).toEqual(["default.c-mine-2"]);
    expect(output).toContain('[run_record_entry_unproven] Not adopting "default.c-theirs" listed as created in the run record of stack "proof-c": it carries no proof');
    const reader = fleetOf("proof-c");
    const outputs = await reader.list().finally(() => reader.close());
    expect(outputs.map((g) => [g.userGroupId, g.token])).toEqual([["c-mine-1", expect.any(String)], ["c-mine-2", made!.token]]);
    // Their group untouched, and the record holds nothing more.
    expect(server.groups().find((g) => g.user_group_id === "c-theirs")).toEqual(theirs);
    expect(latestLease("proof-c").record["created"] ?? []).toEqual([]);
  }, 240_000);
});
