// UserGroupFleet.close() drains (issue 25 item 6): calls made before it finish as
// usual, calls after it get FleetClosedError, and it resolves only once the
// earlier calls are done (a service's graceful stop awaits it before exiting).
import { describe, expect, it } from "vitest";
import { FleetClosedError, UserGroupFleet } from "../../../provider/automation";
import { useStackFixture } from "../../support/stack-fixture";

const { server, env, runOptions } = useStackFixture({ label: "fleet-close", apiKeys: ["fleet-close-key-0001"], passphrase: "fleet-close" });

describe("UserGroupFleet.close()", () => {
  it("drains: earlier calls finish with their groups, later ones are refused, close resolves after them", async () => {
    const fleet = new UserGroupFleet(runOptions("closing", { backendUrl: `file://${env.backendDir}` }));
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
