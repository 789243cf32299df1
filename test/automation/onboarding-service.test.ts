// examples/onboarding-service: a customer signs up, the service provisions the
// customer's group and answers with the token the app stores.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOnboardingService, type OnboardingService } from "../../examples/onboarding-service/service";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "onboarding-customer-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;
let service: OnboardingService;

async function signUp(body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${service.url}/customers`, { method: "POST", body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("onboarding");
  service = await startOnboardingService({
    workDir: path.join(env.workDir, "onboarding"),
    envVars: { ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  });
});
afterAll(async () => {
  await service?.close();
  await server?.close();
  env?.cleanup();
});

describe("onboarding service", () => {
  it("provisions a group per new customer and returns its token", async () => {
    const acme = await signUp({ id: "acme", name: "Acme Corp", plan: "team" });
    expect(acme.status, JSON.stringify(acme.json)).toBe(201);
    expect(acme.json).toMatchObject({ userGroupId: "acme", change: "create" });
    expect(acme.json.token).toBe(server.groups().find((g) => g.user_group_id === "acme")?.token);
    expect(server.groups()[0]).toMatchObject({ name: "Acme Corp", properties: { plan: "team" } });
  });

  it("queues sign-ups that arrive together, and keeps earlier customers", async () => {
    const [globex, initech] = await Promise.all([signUp({ id: "globex", name: "Globex" }), signUp({ id: "initech", name: "Initech" })]);
    expect([globex.status, initech.status]).toEqual([201, 201]);
    expect(server.groups().map((g) => g.user_group_id).sort()).toEqual(["acme", "globex", "initech"]);
    expect(globex.json.token).toBe(server.groups().find((g) => g.user_group_id === "globex")?.token);
  });

  it("answers a repeated sign-up with the same token and no change", async () => {
    const before = server.groups().find((g) => g.user_group_id === "acme")?.token;
    const again = await signUp({ id: "acme", name: "Acme Corp", plan: "team" });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ change: "same", token: before });
  });

  it("refuses a malformed sign-up without provisioning", async () => {
    const before = server.journal().length;
    expect((await signUp({ id: "no spaces allowed", name: "X" })).status).toBe(400);
    expect((await signUp({ id: "ok" })).status).toBe(400);
    expect(server.journal().length).toBe(before);
  });
});
