// userGroupMocks (testing/mocks.ts): a program's unit test without an engine gets
// realistic UserGroup outputs, the token a secret.
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it } from "vitest";
import { UserGroup } from "../../provider/index.js";
import { userGroupMocks } from "../../testing/index.js";

function valueOf<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply((value) => resolve(value)));
}

describe("userGroupMocks", () => {
  it("answers for UserGroup with checked inputs, a secret 64-hex token, a team id, providedId and the environment", async () => {
    const mocks = userGroupMocks({ environment: "Testing", groups: { fixed: { teamId: 77, token: "ab".repeat(32) } } });
    await pulumi.runtime.setMocks(mocks, "project", "stack", false);
    const group = new UserGroup("acme", { name: "Acme", userGroupId: "acme" });
    const fixed = new UserGroup("fixed", { name: "Fixed", userGroupId: "fixed", mapping: { sales: "db1" }, adoptExisting: false });
    expect(await valueOf(group.teamId)).toBe(1);
    expect(await valueOf(group.token)).toMatch(/^[0-9a-f]{64}$/);
    expect(await pulumi.isSecret(group.token)).toBe(true);
    expect(await pulumi.isSecret(group.name)).toBe(false);
    expect(await valueOf(group.providedId)).toBe("acme");
    expect(await valueOf(group.apiEnvironmentTag)).toBe("Testing");
    expect(await valueOf(fixed.teamId)).toBe(77);
    expect(await valueOf(fixed.token)).toBe("ab".repeat(32));
    expect(await valueOf(fixed.mapping)).toEqual({ sales: "db1" });
    expect(await valueOf(fixed.adoptExisting)).toBe(false);
    expect(mocks.created().map((g) => g.userGroupId)).toEqual(["acme", "fixed"]);
  });
});
