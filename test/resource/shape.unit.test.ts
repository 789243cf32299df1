// One shape: the zod schemas in provider/logic/inputs.ts are the source of a
// UserGroup's inputs and outputs. The type assertions below are checked by
// `npm run typecheck` (tsc compiles test/): if the public args or the declared
// outputs drift from the schemas, the build fails.
import type * as pulumi from "@pulumi/pulumi";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import {
  type CheckedInputs,
  checkedInputsSchema,
  checkInputs,
  INPUT_KEYS,
  type UserGroupInputs,
  userGroupInputsSchema,
  type UserGroupOutputs,
  userGroupOutputsSchema,
} from "../../provider/logic/inputs";
import type { UserGroup, UserGroupArgs } from "../../provider/resource/user-group";

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** A member's type as a program or the engine resolves it: inputs unwrapped, no null or undefined. */
type Resolved<T> = NonNullable<pulumi.Unwrap<T>>;

describe("UserGroupArgs follows the input schema", () => {
  it("has exactly the schema's keys, the same ones required", () => {
    expectTypeOf<keyof UserGroupArgs>().toEqualTypeOf<keyof UserGroupInputs>();
    expectTypeOf<(typeof INPUT_KEYS)[number]>().toEqualTypeOf<keyof UserGroupInputs>();
    expectTypeOf<RequiredKeys<UserGroupArgs>>().toEqualTypeOf<RequiredKeys<z.input<typeof userGroupInputsSchema>>>();
    expect([...INPUT_KEYS]).toEqual(Object.keys(userGroupInputsSchema.shape));
  });

  it("takes each member as the schema types it, as a value or an output", () => {
    expectTypeOf<{ [K in keyof UserGroupArgs]-?: Resolved<UserGroupArgs[K]> }>().toEqualTypeOf<{
      [K in keyof UserGroupInputs]-?: Resolved<UserGroupInputs[K]>;
    }>();
    expectTypeOf<pulumi.Output<string>>().toExtend<UserGroupArgs["name"]>();
    expectTypeOf<{ sales: pulumi.Output<string> }>().toExtend<NonNullable<UserGroupArgs["mapping"]>>();
  });
});

describe("UserGroup's outputs follow the outputs schema", () => {
  it("declares every output the state holds, with the schema's type", () => {
    expectTypeOf<{ [K in keyof UserGroupOutputs]-?: Resolved<UserGroup[K]> }>().toEqualTypeOf<{
      [K in keyof UserGroupOutputs]-?: Resolved<UserGroupOutputs[K]>;
    }>();
    expectTypeOf<keyof CheckedInputs>().toEqualTypeOf<keyof UserGroupInputs>();
    expect(Object.keys(userGroupOutputsSchema.shape)).toEqual(expect.arrayContaining([...INPUT_KEYS]));
  });
});

describe("the checked-inputs schema", () => {
  it("accepts what check returns, unchanged", () => {
    const result = checkInputs({ name: "Acme", userGroupId: "acme", properties: null, profile: "testing" });
    if (!result.ok) throw new Error(JSON.stringify(result.failures));
    expect(checkedInputsSchema.parse(result.inputs)).toEqual(result.inputs);
  });

  it("requires the defaults check fills in", () => {
    expect(checkedInputsSchema.safeParse({ name: "Acme", userGroupId: "acme" }).success).toBe(false);
  });
});
