// UserGroupFleet.close() drains (issue 25 item 6): calls made before it finish as
// usual, calls after it get FleetClosedError, and it resolves only once the
// earlier calls are done (a service's graceful stop awaits it before exiting).
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { FleetClosedError, UserGroupFleet } from "../../../provider/automation";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "fleet-close-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("fleet-close");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("UserGroupFleet.close()", () => {
  it("drains: earlier calls finish with their groups, later ones are refused, close resolves after them", async () => {
    const fleet = new UserGroupFleet({
      stack: "closing",
      workDir: path.join(env.workDir, "closing"),
      backendUrl: `file://${env.backendDir}`,
      passphrase: "fleet-close",
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    });
    const order: string[] = [];
    const first = fleet.ensure({ name: "First", userGroupId: "close-first" }).then((r) => (order.push("first"), r));
    const second = fleet.ensure({ name: "Second", userGroupId: "close-second" }).then((r) => (order.push("second"), r));
    const closed = fleet.close().then(() => void order.push("closed"));
    await expect(fleet.ensure({ name: "Late", userGroupId: "close-late" })).rejects.toBeInstanceOf(FleetClosedError);
    await expect(fleet.list()).rejects.toBeInstanceOf(FleetClosedError);
    const results = await Promise.all([first, second]);
    await closed;
    expect(order.at(-1)).toBe("closed");
    const tokens = new Map(server.groups().map((g) => [g.user_group_id, g.token]));
    expect(results.map((r) => [r.userGroupId, r.change, r.token])).toEqual([
      ["close-first", "create", tokens.get("close-first")],
      ["close-second", "create", tokens.get("close-second")],
    ]);
    expect(tokens.has("close-late")).toBe(false);
    // Closing again is harmless.
    await fleet.close();
  }, 120_000);
});
