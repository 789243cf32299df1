// Every example, a real on-disk program run by the Node.js language host,
// through its whole lifecycle against its own fake server. The examples run
// side by side: each has its own server, backend and work directory.
import { describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { runExampleLifecycle } from "../support/example-harness";

const CUSTOMER = { key: "example-customer-key-00001", environment: "Customer" as const };
const TESTING = { key: "example-testing-key-000002", environment: "Testing" as const };

const defaultCredentials = (url: string) => ({
  "user-groups:baseUrl": { value: url },
  "user-groups:apiKey": { value: CUSTOMER.key, secret: true },
});

// A lifecycle is a dozen engine runs: on a busy 2-core machine that takes minutes.
describe.concurrent("examples", { timeout: 360_000 }, () => {
  it("quickstart: one group, secret token, in-place update", async () => {
    await runExampleLifecycle({
      example: "quickstart",
      apiKeys: [CUSTOMER],
      config: (server) => defaultCredentials(server.url),
      creates: 1,
      verifyUp: async ({ server, stack, outputs }) => {
        const out = await outputs();
        expect(out.token).toMatchObject({ secret: true, value: server.groups()[0]?.token });
        // Where the group is declared, as Pulumi records it: the TypeScript line, through
        // source maps, though UserGroup skips formatting the SDK's promise stacks.
        const state = await stack.exportStack();
        const group = state.deployment.resources.find((r: { type: string }) => r.type.endsWith(":UserGroup"));
        expect(group?.sourcePosition).toMatch(/\/index\.ts#7,\d+$/);
        expect(out.environment?.value).toBe("Customer");
        expect(server.groups()[0]).toMatchObject({ name: "Acme Corp", mapping: { sales: "warehouse-eu" }, properties: { region: "eu", seats: 40 } });
      },
      edits: [
        {
          description: "more seats",
          config: { seats: { value: "41" } },
          expect: { update: 1 },
          verify: async ({ server }) => expect(server.groups()[0]?.properties).toEqual({ region: "eu", seats: 41 }),
        },
      ],
    });
  });

  it("multi-tenant: tenants file, Customer and Testing profiles side by side", async () => {
    await runExampleLifecycle({
      example: "multi-tenant",
      apiKeys: [CUSTOMER, TESTING],
      config: (server) => ({
        "user-groups:profiles.customer.baseUrl": { value: server.url },
        "user-groups:profiles.customer.apiKey": { value: CUSTOMER.key, secret: true },
      }),
      // The Testing key comes from the environment, the Customer one from config.
      envVars: (server) => ({ USER_GROUPS_BASE_URL_TESTING: server.url, USER_GROUPS_API_KEY_TESTING: TESTING.key }),
      creates: 4,
      verifyUp: async ({ server, outputs }) => {
        expect(server.groups().map((g) => `${g.environment}/${g.user_group_id}`).sort()).toEqual([
          "Customer/acme",
          "Customer/globex",
          "Testing/acme",
          "Testing/initech",
        ]);
        const out = await outputs();
        expect(out.groupTokens?.secret).toBe(true);
        const tokens = out.groupTokens?.value as Record<string, string>;
        expect(tokens["acme-testing"]).toBe(server.groups().find((g) => g.environment === "Testing" && g.user_group_id === "acme")?.token);
        expect(out.groupEnvironments?.value).toMatchObject({ "acme-customer": "Customer", "acme-testing": "Testing" });
      },
    });
  });

  it("rotation: a new period rotates the token in place", async () => {
    let before = "";
    await runExampleLifecycle({
      example: "rotation",
      apiKeys: [CUSTOMER],
      config: (server) => ({ ...defaultCredentials(server.url), period: { value: "2026-11" } }),
      creates: 1,
      verifyUp: async ({ server }) => {
        before = server.groups()[0]?.token ?? "";
      },
      edits: [
        {
          description: "next period",
          config: { period: { value: "2026-12" } },
          expect: { update: 1 },
          verify: async ({ server, outputs }) => {
            const after = server.groups()[0]?.token;
            expect(after).not.toBe(before);
            expect((await outputs()).token?.value).toBe(after);
            expect(server.groups()).toHaveLength(1);
          },
        },
      ],
    });
  });

  it("adopt: existing groups are taken over with their tokens", async () => {
    const existingTokens: string[] = [];
    await runExampleLifecycle({
      example: "adopt",
      apiKeys: [CUSTOMER],
      setup: async (server) => {
        // Made by hand, outside Pulumi.
        const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: CUSTOMER.key });
        for (const id of ["legacy-1", "legacy-2"]) {
          existingTokens.push((await operator.getOrCreate({ name: `hand-made ${id}`, user_group_id: id })).response.user_group.token);
        }
        await operator.close();
      },
      config: (server) => ({
        ...defaultCredentials(server.url),
        "existing[0]": { value: "legacy-1" },
        "existing[1]": { value: "legacy-2" },
      }),
      creates: 2,
      verifyUp: async ({ server, outputs }) => {
        expect(server.groups()).toHaveLength(2);
        expect(server.groups().map((g) => g.name).sort()).toEqual(["Legacy legacy-1", "Legacy legacy-2"]);
        expect((await outputs()).tokens?.value).toEqual({ "legacy-1": existingTokens[0], "legacy-2": existingTokens[1] });
      },
    });
  });
});
