// Pulumi's `import` resource option cannot work for a dynamic resource: the engine
// asks the dynamic-provider host to read the group with no provider module, and the
// host crashes with `code must be a string, not undefined`. A UserGroup refuses the
// option when it is declared, and points at adoptExisting. Runs under Pulumi's mocks:
// what is checked is what the program sees, before anything reaches an engine.
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, describe, expect, it } from "vitest";
import { ImportNotSupportedError, UserGroup, UserGroupsError } from "../../provider";

const registered: string[] = [];

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push(args.name);
        return { id: `${args.name}-id`, state: { ...args.inputs, token: "t".repeat(64), teamId: 1, providedId: args.inputs.userGroupId } };
      },
      call: () => ({}),
    },
    "import-option",
    "test",
    false,
  );
});

describe("UserGroup with Pulumi's import option", () => {
  it("is refused at construction, naming adoptExisting, and registers nothing", () => {
    const declare = () => new UserGroup("legacy", { name: "Legacy Co", userGroupId: "legacy-1" }, { import: "legacy-1" });
    expect(declare).toThrow(ImportNotSupportedError);
    expect(declare).toThrow(/UserGroup "legacy": Pulumi's import option does not work .* set adoptExisting: true instead/);
    expect(registered).not.toContain("legacy");
  });

  it("is a UserGroupsError with a stable code, and never quotes the import id", () => {
    const importId = "a".repeat(64); // someone may paste a token there
    let error: unknown;
    try {
      new UserGroup("pasted", { name: "Pasted", userGroupId: "pasted" }, { import: importId });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UserGroupsError);
    expect((error as UserGroupsError).code).toBe("import_not_supported");
    expect((error as Error).message).not.toContain(importId);
  });

  it("leaves a group without the option, and one with adoptExisting, to register as usual", async () => {
    const plain = new UserGroup("plain", { name: "Plain", userGroupId: "plain" });
    const adopted = new UserGroup("adopted", { name: "Adopted", userGroupId: "legacy-2", adoptExisting: true });
    const ids = await Promise.all([plain, adopted].map((group) => new Promise((resolve) => group.id.apply(resolve))));
    expect(ids).toEqual(["plain-id", "adopted-id"]);
    expect(registered).toEqual(expect.arrayContaining(["plain", "adopted"]));
  });
});
