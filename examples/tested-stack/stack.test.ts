// The stack's tests, against the emulator: `npx vitest run` in this folder.
import { createTestStack, startEmulator, type TestEmulator } from "pulumi-user-groups/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let emulator: TestEmulator;
beforeAll(async () => {
  emulator = await startEmulator(); // or USER_GROUPS_EMULATOR_URL: one emulator for every test file
});
afterAll(() => emulator.close());

it("creates a group per tenant, tokens secret", async () => {
  await using stack = await createTestStack({ projectDir: __dirname, emulator, config: { tenants: { value: '["acme","initech"]' } } });
  const up = await stack.up();
  expect(up.changes).toEqual({ create: 2 });
  expect(up.outputs.tokens?.secret).toBe(true);
  expect((await stack.groups()).map((g) => g.user_group_id).sort()).toEqual(["acme", "initech"]);
  await stack.expectRequests({ method: "GET", userGroupId: "initech", body: { mapping: { sales: "warehouse-initech" } } }, { times: 1 });
});

it("a plan change updates in place, sending only PUTs", async () => {
  await using stack = await createTestStack({ projectDir: __dirname, emulator });
  await stack.up();
  await stack.stack.setConfig("plan", { value: "pro" });
  const up = await stack.up();
  expect(up.changes).toEqual({ update: 2 });
  expect(up.requests.every((r) => r.method === "PUT" && r.status === 200)).toBe(true);
  expect((await stack.groups()).map((g) => g.properties)).toEqual([{ plan: "pro" }, { plan: "pro" }]);
});

it("refuses to take over a group it did not create (seeded with a fixed token and team id)", async () => {
  await using stack = await createTestStack({
    projectDir: __dirname,
    emulator,
    namespace: { seed: [{ user_group_id: "acme", name: "Old name", team_id: 42, token: "ab".repeat(32) }] },
  });
  await expect(stack.up()).rejects.toThrow(/"acme\\?" already exists in the Customer environment, and this stack did not create it/);
  expect((await stack.groups())[0]).toMatchObject({ name: "Old name", team_id: 42 });
});
