import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { groupOfResourceName, nameOfUrn, resourceNameOf, urnOf } from "../../../provider/automation/model/resource-name.js";
import { validateGroups } from "../../../provider/automation/model/groups-spec.js";

describe("resource names of groups", () => {
  it("keeps the name it always had for ids with no Pulumi syntax in them", () => {
    for (const id of ["acme", "tenant:42", "a b", "team/eu", "Ünïcødé-✓", "default.x", "x.y.z", "$ref"]) {
      expect(resourceNameOf({ userGroupId: id })).toBe(`default.${id}`);
      expect(resourceNameOf({ userGroupId: id, profile: "testing" })).toBe(`testing.${id}`);
    }
  });

  it("encodes globs, URN separators, its escape and control characters", () => {
    expect(resourceNameOf({ userGroupId: "*" })).toBe("default.%2A");
    expect(resourceNameOf({ userGroupId: "**" })).toBe("default.%2A%2A");
    expect(resourceNameOf({ userGroupId: "a::b" })).toBe("default.a%3A%3Ab");
    expect(resourceNameOf({ userGroupId: "50%" })).toBe("default.50%25");
    expect(resourceNameOf({ userGroupId: "x\u001b[8my" })).toBe("default.x%1B[8my");
    expect(resourceNameOf({ userGroupId: "a\u202eb" })).toBe("default.a%E2%80%AEb");
  });

  it("never puts '*' or '::' into a name, and reads every name back to its group", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 1, maxLength: 40 }), fc.option(fc.constantFrom("testing", "eu-prod"), { nil: undefined }), (id, profile) => {
        const name = resourceNameOf({ userGroupId: id, profile });
        expect(name).not.toContain("*");
        expect(name).not.toContain("::");
        expect(name).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
        expect(groupOfResourceName(name)).toEqual(profile === undefined ? { userGroupId: id } : { userGroupId: id, profile });
        expect(nameOfUrn(urnOf("prod", "user-groups", "pkg:index:UserGroup", name))).toBe(name);
      }),
      { numRuns: 2000 },
    );
  });

  it("gives distinct ids distinct names (ids that look like encodings included)", () => {
    const ids = ["*", "%2A", "%252A", "a::b", "a%3A%3Ab", "x", "default.x", "50%", "50%25"];
    const names = ids.map((userGroupId) => resourceNameOf({ userGroupId }));
    expect(new Set(names).size).toBe(ids.length);
  });

  it("reads the name of a URN after its third '::', not its last", () => {
    expect(nameOfUrn("urn:pulumi:prod::user-groups::pkg:index:UserGroup::default.a::b")).toBe("default.a::b");
    expect(() => nameOfUrn("default.x")).toThrow(/not the resource name/);
  });

  it("refuses the profile 'default', whose names are those of groups without a profile", () => {
    expect(() => validateGroups([{ name: "X", userGroupId: "x", profile: "default" }])).toThrow(/profile "default" is reserved/);
  });
});
