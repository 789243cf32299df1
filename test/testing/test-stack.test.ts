// createTestStack (pulumi-user-groups/testing) as a user's test uses it: the user's
// inline program against the emulator in one call, outputs with their secrets,
// the requests each run sent, parallel stacks on one emulator, a reused emulator
// by URL, and nothing left behind on any way out. Needs the engine.
import * as pulumi from "@pulumi/pulumi";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startFakeServer } from "../../fake-server/index.js";
import { createTestStack, EMULATOR_URL_ENV, startEmulator, type TestEmulator, type TestStackOptions } from "../../testing/index.js";
import { loadPackage } from "../support/user-group-stack.js";
import { REPO_ROOT } from "../support/pulumi-env.js";

const base = (): Pick<TestStackOptions, "workRoot" | "pulumiBinDir" | "isolatedPulumiHome"> => ({
  workRoot: path.join(REPO_ROOT, ".work"),
  pulumiBinDir: inject("pulumiBinDir"),
  isolatedPulumiHome: true,
});

/** The user's program: two groups, the token exported (a secret), the team id in the clear. */
async function program(): Promise<Record<string, unknown>> {
  const { UserGroup } = loadPackage();
  const acme = new UserGroup("acme", { name: "Acme", userGroupId: "acme", mapping: { sales: "db1" } });
  new UserGroup("globex", { name: "Globex", userGroupId: "globex" });
  return { token: acme.token, teamId: acme.teamId, label: pulumi.output("plain") };
}

let emulator: TestEmulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => {
  await emulator.close();
});

describe("createTestStack", () => {
  it("up, preview, refresh, destroy: outputs with secrets marked, the requests of each run, then nothing left", async () => {
    let dir: string;
    {
      await using stack = await createTestStack({ ...base(), program, emulator });
      dir = stack.dir;
      expect(statSync(stack.dir).mode & 0o777).toBe(0o700);
      expect(statSync(stack.backendDir).mode & 0o777).toBe(0o700);
      expect(stack.envVars).toMatchObject({ PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true", PULUMI_BACKEND_URL: `file://${stack.backendDir}` });

      const up = await stack.up();
      expect(up.changes).toEqual({ create: 2 });
      expect(up.outputs["token"]).toEqual({ value: expect.stringMatching(/^[0-9a-f]{64}$/), secret: true });
      expect(up.outputs["teamId"]).toEqual({ value: expect.any(Number), secret: false });
      // Each group is got-or-created; the one with a mapping is then updated to it (the service keeps a GET's mapping only on create).
      expect(up.requests.filter((r) => r.method === "GET").map((r) => `${r.status} ${r.userGroupId}`).sort()).toEqual(["200 acme", "200 globex"]);
      expect(up.requests.every((r) => r.status === 200 && ["acme", "globex"].includes(r.userGroupId ?? ""))).toBe(true);
      await stack.expectRequests({ method: "GET", userGroupId: "acme", body: { mapping: { sales: "db1" } } }, { times: 1 });
      expect((await stack.groups()).map((g) => g.user_group_id).sort()).toEqual(["acme", "globex"]);

      const preview = await stack.preview();
      expect(preview.changes).toEqual({ same: 2 });
      expect(preview.requests).toEqual([]);
      const refresh = await stack.refresh();
      expect(refresh.requests.length).toBeGreaterThan(0);
      const destroy = await stack.destroy();
      expect(destroy.changes).toEqual({ delete: 2 });
      expect(destroy.requests.map((r) => r.method)).toEqual(["DELETE", "DELETE"]);
      expect(await stack.groups()).toEqual([]);
    }
    expect(existsSync(dir)).toBe(false);
  });

  it("a failed run names its step, never the key or the passphrase; dispose still cleans up", async () => {
    const stack = await createTestStack({ ...base(), program, emulator });
    try {
      await stack.namespace.setFaults([{ method: "GET", action: "status", status: 400 }]);
      const failure = await stack.up().then(
        () => undefined,
        (error: unknown) => error as Error & { code?: string },
      );
      expect(failure?.code).toBe("test_stack_failed");
      expect(failure?.message).toMatch(/^up failed: /);
      expect(failure?.message).not.toContain(stack.namespace.key);
      expect(failure?.message).not.toContain(stack.envVars["PULUMI_CONFIG_PASSPHRASE"]);
    } finally {
      await stack.dispose();
      await stack.dispose();
    }
    expect(existsSync(stack.dir)).toBe(false);
    // The namespace is gone with the stack: its key is refused.
    const res = await request(`${stack.namespace.url}/api/user`, {
      method: "GET",
      headers: { authorization: `Token ${stack.namespace.key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "x", user_group_id: "x" }),
    });
    await res.body.text();
    expect(res.statusCode).toBe(401);
  });

  it("a bad call makes nothing: both program and projectDir", async () => {
    await expect(createTestStack({ ...base(), program, projectDir: REPO_ROOT })).rejects.toThrow(/exactly one of program and projectDir/);
  });

  it("stacks in parallel on one emulator see only their own groups and requests; seeded groups are adopted", async () => {
    const seeded = "cd".repeat(32);
    const adopt = async (): Promise<Record<string, unknown>> => {
      const { UserGroup } = loadPackage();
      const group = new UserGroup("acme", { name: "Acme", userGroupId: "acme", adoptExisting: true });
      return { token: group.token, teamId: group.teamId };
    };
    const runs = await Promise.all(
      [0, 1].map(async (i) => {
        await using stack = await createTestStack({ ...base(), program: adopt, emulator, namespace: { seed: [{ user_group_id: "acme", name: "Acme", team_id: 900 + i, token: seeded }] } });
        const up = await stack.up();
        return { teamId: up.outputs["teamId"]?.value, token: up.outputs["token"], requests: new Set(up.requests.map((r) => r.userGroupId)).size };
      }),
    );
    expect(runs).toEqual([
      { teamId: 900, token: { value: seeded, secret: true }, requests: 1 },
      { teamId: 901, token: { value: seeded, secret: true }, requests: 1 },
    ]);
  });

  it("reuses an emulator running elsewhere through its base URL (its admin API)", async () => {
    const server = await startFakeServer({ apiKeys: [{ key: "remote-own-key-0001", environment: "Customer" }] });
    try {
      await using stack = await createTestStack({ ...base(), program, emulator: server.url });
      expect(stack.emulator.owned).toBe(false);
      const up = await stack.up();
      expect(new Set(up.requests.map((r) => r.userGroupId))).toEqual(new Set(["acme", "globex"]));
      expect(server.groups()).toEqual([]);
      expect((await stack.groups()).length).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("credentials none: the stack's config names the service, nothing of it in the environment", async () => {
    const solo = async (): Promise<Record<string, unknown>> => {
      const { UserGroup } = loadPackage();
      return { teamId: new UserGroup("solo", { name: "Solo", userGroupId: "solo" }).teamId };
    };
    await using stack = await createTestStack({ ...base(), program: solo, emulator, credentials: "none" });
    expect(Object.keys(stack.envVars).filter((name) => name.startsWith("USER_GROUPS_") && name !== "USER_GROUPS_RATE_LIMIT")).toEqual([]);
    await stack.stack.setAllConfig({ "user-groups:baseUrl": { value: stack.namespace.url }, "user-groups:apiKey": { value: stack.namespace.key, secret: true } });
    const up = await stack.up();
    expect(up.changes).toEqual({ create: 1 });
    // The requests went to the namespace, with its key, from the config alone.
    expect(up.requests.map((r) => `${r.method} ${r.status} ${r.userGroupId}`)).toContain("GET 200 solo");
    expect(up.requests.every((r) => r.status === 200 && r.userGroupId === "solo")).toBe(true);
  });

  it("emulator.server: the FakeServer of one in this process (reuse: false starts one even with USER_GROUPS_EMULATOR_URL set), none for one reused", async () => {
    expect(emulator.server?.url).toBe(emulator.url);
    const reused = await startEmulator({ baseUrl: emulator.url });
    expect(reused.server).toBeUndefined();
    const before = process.env[EMULATOR_URL_ENV];
    process.env[EMULATOR_URL_ENV] = reused.url;
    let own: TestEmulator | undefined;
    try {
      own = await startEmulator({ reuse: false, server: { apiKeys: [{ key: "own-fixture-key-0001", environment: "Testing" }] } });
      expect(own.owned).toBe(true);
      expect(own.url).not.toBe(emulator.url);
      expect(own.server?.apiKeys).toEqual([expect.objectContaining({ key: "own-fixture-key-0001", environment: "Testing" })]);
    } finally {
      if (before === undefined) delete process.env[EMULATOR_URL_ENV];
      else process.env[EMULATOR_URL_ENV] = before;
      await own?.close();
    }
  });
});
