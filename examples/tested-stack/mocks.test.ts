// A unit test of the program without an engine or an emulator: Pulumi's mocks.
import * as pulumi from "@pulumi/pulumi";
import { userGroupMocks } from "pulumi-user-groups/testing";
import { expect, it } from "vitest";

it("exports one team id per tenant, and the tokens as a secret", async () => {
  const mocks = userGroupMocks();
  await pulumi.runtime.setMocks(mocks, "tested-stack", "unit", false);
  const program = await import("./index.js");
  const teamIds = await new Promise((resolve) => program.teamIds.apply(resolve));
  expect(teamIds).toEqual([1, 2]);
  expect(await pulumi.isSecret(program.tokens)).toBe(true);
  expect(mocks.created().map((g) => g.userGroupId)).toEqual(["acme", "globex"]);
});
