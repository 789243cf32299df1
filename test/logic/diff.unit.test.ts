// R2: what each change of inputs does.
import { describe, expect, it } from "vitest";
import { diffUserGroup } from "../../provider/logic/diff";
import type { CheckedInputs } from "../../provider/logic/inputs";

const base: CheckedInputs = { name: "Acme", userGroupId: "acme", mapping: { sales: "eu" }, adoptExisting: false };
// Old outputs carry what the service returned as well.
const olds = { ...base, token: "t".repeat(64), teamId: 7, providedId: "acme", apiEnvironmentTag: "Customer" };

describe("diffUserGroup", () => {
  it("sees no change when nothing declared changed", () => {
    expect(diffUserGroup(olds, { ...base })).toMatchObject({ changes: false, replaces: [], updates: [] });
  });

  it("treats an absent and an empty mapping, and absent and null properties, as equal", () => {
    const { mapping: _m, ...noMapping } = olds;
    expect(diffUserGroup(noMapping, { ...base, mapping: {} }).changes).toBe(false);
    expect(diffUserGroup({ ...olds, properties: undefined }, { ...base }).changes).toBe(false);
  });

  it.each([
    ["name", { name: "Acme Corp" }],
    ["mapping", { mapping: { sales: "us" } }],
    ["properties", { properties: { region: "eu" } }],
    ["rotationTrigger", { rotationTrigger: "2026-12" }],
  ])("updates %s in place", (field, change) => {
    const outcome = diffUserGroup(olds, { ...base, ...change });
    expect(outcome).toMatchObject({ changes: true, replaces: [], updates: [field] });
  });

  it("replaces on a new userGroupId, creating the new group before deleting the old", () => {
    expect(diffUserGroup(olds, { ...base, userGroupId: "acme-2" })).toMatchObject({
      changes: true,
      replaces: ["userGroupId"],
      deleteBeforeReplace: false,
    });
  });

  it("replaces on a new profile, deleting first when the id stays", () => {
    expect(diffUserGroup(olds, { ...base, profile: "testing" })).toMatchObject({
      changes: true,
      replaces: ["profile"],
      deleteBeforeReplace: true,
    });
  });

  it("ignores adoptExisting and outputs", () => {
    expect(diffUserGroup(olds, { ...base, adoptExisting: true }).changes).toBe(false);
  });

  it("compares properties deeply", () => {
    const withProps = { ...olds, properties: { a: { b: [1, 2] } } };
    expect(diffUserGroup(withProps, { ...base, properties: { a: { b: [1, 2] } } }).changes).toBe(false);
    expect(diffUserGroup(withProps, { ...base, properties: { a: { b: [2, 1] } } }).updates).toEqual(["properties"]);
  });
});
