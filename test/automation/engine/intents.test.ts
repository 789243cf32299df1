// Issue #44 item 3: a whole-set destroy, and an up of new groups only, run
// without Pulumi's checkpoint per step (provider/automation/engine/intents.ts);
// what a killed run was doing is in its run record: the groups it was deleting
// (`removing`) and, proven as a fleet's `created` entry is, the groups it was
// creating (`intents`). The next holder's takeover settles them. Here the record
// a killed run would leave is written by hand, with the attack beside it, and a
// plain whole-set up takes the stack over:
// - a proven intent whose group the service holds is adopted (its token kept, not re-created);
// - a proven intent whose group the service does not hold is dropped (nothing created for it);
// - a planted intent (no proof) naming someone else's group is refused with its coded line, their group untouched;
// - a group being deleted (in the state, gone from the service) is read back and dropped, so the up re-creates it.
import { pbkdf2Sync } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Deployment } from "@pulumi/pulumi/automation";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { provisionUserGroups, type TakeoverReport } from "../../../provider/automation";
import { checkpointFreePlan } from "../../../provider/automation/engine";
import { createdProofKey, provenEntry } from "../../../provider/automation/lease";
import { UserGroupsClient } from "../../../provider/client/http-client";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "intents-key-000000001";
const PASSPHRASE = "intents-passphrase";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("intents");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

const stateOf = (resources: Array<Record<string, unknown>>, pending: unknown[] = []): Deployment => ({ version: 3, deployment: { resources, pending_operations: pending } }) as unknown as Deployment;
const group = (id: string) => ({ urn: `urn:pulumi:s::user-groups::${USER_GROUP_TYPE}::default.${id}`, type: USER_GROUP_TYPE });

describe("which whole-set runs go without a checkpoint per step", () => {
  const specs = [{ name: "A", userGroupId: "a" }];

  it("an up of new groups only, and a destroy: with what each records first", () => {
    expect(checkpointFreePlan("up", stateOf([]), specs)).toEqual({ creating: specs, removing: [] });
    expect(checkpointFreePlan("destroy", stateOf([group("a"), group("b")]), [])).toEqual({ creating: [], removing: ["default.a", "default.b"] });
  });

  it("keeps checkpoints for an up over groups the state holds (a rotation, an update), anything pending, a refresh or preview, a destroy of nothing", () => {
    expect(checkpointFreePlan("up", stateOf([group("a")]), specs)).toBeUndefined();
    expect(checkpointFreePlan("up", stateOf([], [{ type: "creating" }]), specs)).toBeUndefined();
    expect(checkpointFreePlan("destroy", stateOf([group("a")], [{ type: "deleting" }]), [])).toBeUndefined();
    expect(checkpointFreePlan("refresh", stateOf([]), specs)).toBeUndefined();
    expect(checkpointFreePlan("preview", stateOf([]), specs)).toBeUndefined();
    expect(checkpointFreePlan("destroy", stateOf([]), [])).toBeUndefined();
    expect(checkpointFreePlan("up", stateOf([]), [])).toBeUndefined();
  });
});

const leaseDirOf = (stack: string) => path.join(env.backendDir, ".user-groups", "leases", "user-groups", stack);
function latestLease(stack: string): { generation: number; record: Record<string, unknown> } {
  const generation = Math.max(...readdirSync(leaseDirOf(stack)).map((name) => Number(/^lease-(\d+)\.json$/.exec(name)?.[1] ?? -1)));
  return { generation, record: JSON.parse(readFileSync(path.join(leaseDirOf(stack), `lease-${generation}.json`), "utf8")) as Record<string, unknown> };
}

/**
 * The stack's proof key worked out here on its own: PBKDF2 of the passphrase with a salt of the package and the stack's
 * name, then HKDF with the stack's name (as created-proof.test.ts; the checkpoint's salt must not matter).
 */
function proofKeyOfStack(stack: string): Buffer {
  const file = path.join(env.backendDir, ".pulumi", "stacks", "user-groups", `${stack}.json`);
  const checkpoint = JSON.parse(readFileSync(file, "utf8")) as { checkpoint: { latest: { secrets_providers: { type: string } } } };
  expect(checkpoint.checkpoint.latest.secrets_providers.type).toBe("passphrase");
  return createdProofKey(pbkdf2Sync(PASSPHRASE, `pulumi-user-groups run record proofs\u0000${stack}`, 1_000_000, 32, "sha256"), stack);
}

describe("a takeover settling a killed checkpoint-free run's intents", () => {
  it("adopts what the service holds, drops what it does not, refuses a planted intent, and reads back a group being deleted", async () => {
    const stack = "intents-a";
    const options = {
      stack,
      workDir: path.join(env.workDir, stack),
      backendUrl: `file://${env.backendDir}`,
      passphrase: PASSPHRASE,
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    };
    const first = await provisionUserGroups({ ...options, groups: [{ name: "Keep 1", userGroupId: "keep-1" }, { name: "Gone 1", userGroupId: "gone-1" }] });
    expect(first.summary.create).toBe(2);
    // The first up was itself checkpoint-free: its intents were cleared once it ended.
    expect(latestLease(stack).record["intents"] ?? []).toEqual([]);

    // What the killed run did on the service: deleted gone-1, created made-1; someone else holds theirs-1.
    const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, allowInsecureHttp: true });
    const goneToken = server.groups().find((g) => g.user_group_id === "gone-1")!.token;
    await client.delete({ current_token: goneToken, user_group_id: "gone-1" });
    await client.close();
    const [made] = server.seed([{ name: "Made 1", user_group_id: "made-1" }]);
    const [theirs] = server.seed([{ name: "Theirs", user_group_id: "theirs-1" }]);

    const key = proofKeyOfStack(stack);
    const intents = [
      provenEntry(key, { resourceName: "default.made-1", inputs: { name: "Made 1", userGroupId: "made-1" } }),
      provenEntry(key, { resourceName: "default.never-1", inputs: { name: "Never 1", userGroupId: "never-1" } }),
      { resourceName: "default.theirs-1", inputs: { name: "Theirs", userGroupId: "theirs-1" } },
    ];
    const { generation, record } = latestLease(stack);
    const planted = { ...record, runId: "killed-run", released: true, intents, removing: ["default.gone-1"] };
    writeFileSync(path.join(leaseDirOf(stack), `lease-${generation + 1}.json`), JSON.stringify(planted), { mode: 0o600 });

    const takeovers: TakeoverReport[] = [];
    let output = "";
    const declared = [
      { name: "Keep 1", userGroupId: "keep-1" },
      { name: "Gone 1", userGroupId: "gone-1" },
      { name: "Made 1", userGroupId: "made-1" },
    ];
    const up = await provisionUserGroups({ ...options, groups: declared, onTakeover: (t) => takeovers.push(t), onOutput: (text) => void (output += text) });
    expect(takeovers).toHaveLength(1);
    expect(takeovers[0]!.adopted).toEqual(["default.made-1"]);
    expect(output).toContain('[run_record_entry_unproven] Not adopting "default.theirs-1" listed as created in the run record of stack "intents-a": it carries no proof');
    // made-1 adopted with the service's token (not re-created); gone-1 read back as gone, then created again by the up.
    const changes = Object.fromEntries(up.groups.map((g) => [g.userGroupId, g.change]));
    expect(changes).toEqual({ "keep-1": "same", "gone-1": "create", "made-1": "same" });
    expect(up.groups.find((g) => g.userGroupId === "made-1")?.token).toBe(made!.token);
    const held = server.groups();
    expect(held.map((g) => g.user_group_id).sort()).toEqual(["gone-1", "keep-1", "made-1", "theirs-1"]);
    expect(up.groups.find((g) => g.userGroupId === "gone-1")?.token).toBe(held.find((g) => g.user_group_id === "gone-1")!.token);
    expect(held.find((g) => g.user_group_id === "theirs-1")).toEqual(theirs);
    // Settled: nothing left in the record to settle again.
    const after = latestLease(stack).record;
    expect([after["intents"] ?? [], after["removing"] ?? [], after["created"] ?? []]).toEqual([[], [], []]);
  }, 240_000);
});
