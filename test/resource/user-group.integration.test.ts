// The UserGroup resource end to end: a real Pulumi engine through the
// Automation API, against the fake server, with a file backend. One stack walks
// through the life of its groups; each step checks what a user would see.
import * as pulumi from "@pulumi/pulumi";
import type { OutputMap, Stack } from "@pulumi/pulumi/automation";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { runOnly } from "../../provider/automation/engine/pulumi-cli";
import { UserGroupsClient } from "../../provider/client/http-client";
import type { UserGroupArgs } from "../../provider/resource/user-group";
import { destroyChanges, refreshChanges, type RunChanges, upWithOutputs } from "../support/run-results";
import { story } from "../support/story";
import { createUserGroupStack, loadPackage, readStoredState, type StackHandle } from "../support/user-group-stack";

const CUSTOMER_KEY = "integration-customer-key-0001";
const CUSTOMER_KEY_2 = "integration-customer-key-0002";
const TESTING_KEY = "integration-testing-key-0003";


let server: FakeServer;
let handle: StackHandle;
let stack: Stack;
let oob: UserGroupsClient; // an operator acting outside Pulumi
/** The program declares whatever this holds: resource name -> args. */
let declared: Record<string, UserGroupArgs> = {};
const seenTokens = new Set<string>();

function serverGroup(id: string, environment = "Customer") {
  return server.groups().find((g) => g.user_group_id === id && g.environment === environment);
}
function rememberTokens() {
  for (const g of server.groups()) seenTokens.add(g.token);
}
/** The group's token output, a secret, from the outputs an up returned (read right after it: no engine command of its own). */
function tokenOf(outputs: OutputMap, name: string): string {
  const token = outputs[`${name}Token`];
  expect(token?.secret).toBe(true);
  return token?.value as string;
}
const run = { onOutput: (line: string) => handle.onOutput(line) };
/** The outputs the last up returned (read once the engine has ended): the stack's until the next up. */
let latest: OutputMap = {};
/**
 * An up, with what the Automation API's would return: its change counts from the engine's summary event, the
 * stack's outputs from its state (test/support/run-results.ts: one CLI process after the run instead of three).
 */
async function runUp(): Promise<RunChanges & { outputs: OutputMap }> {
  const result = await upWithOutputs(stack, run);
  latest = result.outputs;
  return result;
}
/** The group's token output as the stack holds it now: the last up's (no engine command of its own). */
function tokenOutput(name: string): string {
  return tokenOf(latest, name);
}
/**
 * The stack, for a run whose result this file does not read: the Automation API reads no outputs and no history
 * entry once the engine has ended (two CLI processes an up, one a refresh). The run itself is the same.
 */
function unread(): Pick<Stack, "up" | "refresh" | "destroy"> {
  return runOnly(stack);
}

beforeAll(async () => {
  server = await startFakeServer({
    apiKeys: [
      { key: CUSTOMER_KEY, environment: "Customer" },
      { key: CUSTOMER_KEY_2, environment: "Customer" },
      { key: TESTING_KEY, environment: "Testing" },
    ],
  });
  oob = new UserGroupsClient({ baseUrl: server.url, apiKey: CUSTOMER_KEY });
  const { UserGroup } = loadPackage();
  handle = await createUserGroupStack(
    "user-group",
    async () => {
      const exports: Record<string, unknown> = {};
      for (const [name, args] of Object.entries(declared)) {
        const group = new UserGroup(name, args);
        exports[`${name}Token`] = group.token;
        exports[`${name}Environment`] = group.apiEnvironmentTag;
        exports[`${name}TeamId`] = group.teamId;
      }
      return exports;
    },
    {
      "user-groups:baseUrl": { value: server.url },
      "user-groups:apiKey": { value: CUSTOMER_KEY, secret: true },
    },
    // The Testing profile comes from the environment, as a CI job would set it.
    { USER_GROUPS_BASE_URL_TESTING: server.url, USER_GROUPS_API_KEY_TESTING: TESTING_KEY },
  );
  stack = handle.stack;
});

afterAll(async () => {
  await oob?.close();
  await server?.close();
  await handle?.cleanup();
});

// Each test is a step of that one stack's life, from where the last left it (test/support/story.ts: a step whose
// earlier steps did not pass is skipped, naming the one it builds on).
const step = story();

describe("UserGroup through the Automation API", () => {
  step("creates groups, with the token as a secret output equal to the server's", async () => {
    declared = {
      acme: { name: "Acme Corp", userGroupId: "acme", mapping: { sales: "warehouse-eu" }, properties: { region: "eu", seats: 40 } },
      acmeTest: { name: "Acme (test)", userGroupId: "acme", profile: "testing" },
    };
    const up = await runUp();
    expect(up.summary.resourceChanges).toEqual({ create: 3 });
    expect(serverGroup("acme")).toMatchObject({ name: "Acme Corp", mapping: { sales: "warehouse-eu" }, properties: { region: "eu", seats: 40 } });
    expect(tokenOf(up.outputs, "acme")).toBe(serverGroup("acme")?.token);
    expect(tokenOf(up.outputs, "acmeTest")).toBe(serverGroup("acme", "Testing")?.token);
    expect(up.outputs.acmeEnvironment?.value).toBe("Customer");
    expect(up.outputs.acmeTestEnvironment?.value).toBe("Testing");
    rememberTokens();
  });

  step("shows no changes in a preview and a refresh right after", async () => {
    const preview = await stack.preview({ expectNoChanges: true, ...run });
    expect(preview.changeSummary).toEqual({ same: 3 });
    const refresh = await refreshChanges(stack, { expectNoChanges: true, ...run });
    expect(refresh.summary.resourceChanges).toEqual({ same: 3 });
  });

  step("updates name and properties in place, keeping the token", async () => {
    const before = tokenOutput("acme");
    declared.acme = { ...declared.acme!, name: "Acme Corporation", properties: { region: "eu", seats: 41 } };
    const up = await runUp();
    expect(up.summary.resourceChanges).toEqual({ update: 1, same: 2 });
    expect(serverGroup("acme")).toMatchObject({ name: "Acme Corporation", properties: { region: "eu", seats: 41 }, token: before });
    await stack.preview({ expectNoChanges: true });
  });

  step("rotates the token in place when rotationTrigger changes", async () => {
    const before = tokenOutput("acme");
    declared.acme = { ...declared.acme!, rotationTrigger: "2026-12" };
    const up = await runUp();
    expect(up.summary.resourceChanges).toEqual({ update: 1, same: 2 });
    const after = tokenOf(up.outputs, "acme");
    expect(after).not.toBe(before);
    expect(after).toBe(serverGroup("acme")?.token);
    rememberTokens();
  });

  step("picks up an out-of-band rotation and rename on refresh", async () => {
    const rotated = await oob.rotateToken(tokenOutput("acme"));
    rememberTokens();
    // Pulumi lists the group as unchanged (no declared input changed) but records the new token.
    await unread().refresh(run);
    // Stack outputs are computed by the program: an up with nothing to change shows the refreshed token.
    const same = await runUp();
    expect(same.summary.resourceChanges).toEqual({ same: 3 });
    expect(tokenOf(same.outputs, "acme")).toBe(rotated.user_group.token);

    // The program still declares the old name: a refresh records the rename, the next up puts it back.
    await oob.update({ user_group_id: "acme", name: "Renamed by hand" });
    await unread().refresh(run);
    const preview = await stack.preview(run);
    expect(preview.changeSummary).toEqual({ update: 1, same: 2 });
    await unread().up(run);
    expect(serverGroup("acme")?.name).toBe("Acme Corporation");
    await stack.preview({ expectNoChanges: true });
  });

  step("accepts a new API key without any change to the program or state", async () => {
    await stack.setConfig("user-groups:apiKey", { value: CUSTOMER_KEY_2, secret: true });
    await stack.preview({ expectNoChanges: true });
    await unread().refresh({ expectNoChanges: true });
  });

  step("notices an out-of-band delete on refresh, leaves nothing behind, and up creates it again", async () => {
    await oob.delete({ current_token: serverGroup("acme")!.token });
    const refresh = await refreshChanges(stack, run);
    expect(refresh.summary.resourceChanges).toMatchObject({ delete: 1 });
    expect(serverGroup("acme")).toBeUndefined();
    const up = await runUp();
    expect(up.summary.resourceChanges).toEqual({ create: 1, same: 2 });
    expect(tokenOf(up.outputs, "acme")).toBe(serverGroup("acme")?.token);
    rememberTokens();
  });

  step("replaces the group when userGroupId changes", async () => {
    declared.acme = { ...declared.acme!, userGroupId: "acme-2" };
    const up = await runUp();
    expect(up.summary.resourceChanges).toEqual({ replace: 1, same: 2 });
    expect(serverGroup("acme")).toBeUndefined();
    expect(serverGroup("acme-2")).toMatchObject({ name: "Acme Corporation" });
    expect(tokenOf(up.outputs, "acme")).toBe(serverGroup("acme-2")?.token);
    rememberTokens();
  });

  step("refuses to take over an existing group, then adopts it when asked", async () => {
    const legacy = await oob.getOrCreate({ name: "Legacy", user_group_id: "legacy", properties: { tier: "gold" } });
    rememberTokens();
    const before = server.groups();
    declared.legacy = { name: "Legacy Corp", userGroupId: "legacy", mapping: { sales: "us" } };
    const refused = await unread().up(run).then(() => undefined, (e: unknown) => e as Error);
    expect(refused).toBeInstanceOf(Error);
    expect(String((refused as Error).message)).toMatch(/userGroupId "legacy" already exists in the Customer environment/);
    expect(String((refused as Error).message)).toMatch(/adoptExisting: true/);
    expect(server.groups()).toEqual(before);

    declared.legacy = { ...declared.legacy, adoptExisting: true };
    const up = await runUp();
    expect(up.summary.resourceChanges).toMatchObject({ create: 1 });
    expect(serverGroup("legacy")).toMatchObject({ name: "Legacy Corp", mapping: { sales: "us" }, properties: null, token: legacy.response.user_group.token });
    expect(tokenOf(up.outputs, "legacy")).toBe(legacy.response.user_group.token);
    await stack.preview({ expectNoChanges: true });
  });

  step("rejects invalid input before any request is sent, naming the property", async () => {
    const requestsBefore = server.journal().length;
    declared.broken = { name: "   ", userGroupId: "broken", mapping: { sales: 7 as unknown as string } };
    const error = await unread().up(run).then(() => undefined, (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect(String(error?.message)).toMatch(/name must not be blank/);
    expect(String(error?.message)).toMatch(/mapping\.sales must be a string/);
    expect(server.journal().length).toBe(requestsBefore);
    delete declared.broken;
  });

  step("refuses an asset in properties at check: it is no data (the engine has read it by then)", async () => {
    const requestsBefore = server.journal().length;
    declared.asset = { name: "Asset", userGroupId: "asset", properties: { file: new pulumi.asset.StringAsset("not data") as never } };
    const error = await unread().up(run).then(() => undefined, (e: unknown) => e as Error);
    expect(String(error?.message)).toMatch(/properties\.file holds the key \\?"4dabf18193072939515e22adb298388d\\?", which Pulumi reserves: it would read this object as an asset/);
    expect(server.journal().length).toBe(requestsBefore);
    delete declared.asset;
  });

  step("keeps tokens and API keys out of the state and the output, and the provider holds no credential", async () => {
    const state = readStoredState(handle.env);
    const printed = handle.output.join("");
    for (const secret of [...seenTokens, CUSTOMER_KEY, CUSTOMER_KEY_2, TESTING_KEY]) {
      expect(state).not.toContain(secret);
      expect(printed).not.toContain(secret);
    }
    const deployment = (JSON.parse(state) as { checkpoint: { latest: unknown } }).checkpoint.latest as { resources: Array<{ type: string; inputs: Record<string, unknown>; outputs: Record<string, unknown> }> };
    const groups = deployment.resources.filter((r) => r.type.endsWith(":UserGroup"));
    expect(groups.length).toBe(3);
    for (const group of groups) {
      expect(String(group.outputs.__provider)).toMatch(/require\("node:module"\).*pulumi-user-groups\/provider-runtime/);
      expect(String(group.outputs.__provider).length).toBeLessThan(512);
      expect(group.outputs.token).toMatchObject({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270" });
    }
    // State per group, goal <= 2 KiB.
    for (const group of groups) expect(JSON.stringify(group).length).toBeLessThanOrEqual(2048);
  });

  step("destroys every group, leaving the server empty", async () => {
    const destroy = await destroyChanges(stack, run);
    expect(destroy.summary.resourceChanges).toMatchObject({ delete: 4 });
    expect(server.groups().filter((g) => g.user_group_id !== "legacy" || g.environment !== "Customer")).toEqual([]);
    expect(server.groups()).toEqual([]);
  });
});
