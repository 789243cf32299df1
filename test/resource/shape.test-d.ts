// One shape: the zod schemas in provider/logic/inputs.ts are the source of a
// UserGroup's inputs and outputs. A type test (vitest's typecheck, the "types"
// project of vitest.config.mts; `npm run typecheck` checks it too): if the public
// args or the declared outputs drift from the schemas, it fails. What holds at run
// time: shape.unit.test.ts.
import type * as pulumi from "@pulumi/pulumi";
import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { CheckedInputs, INPUT_KEYS, UserGroupInputs, userGroupInputsSchema, UserGroupOutputs } from "../../provider/logic/inputs";
import type { UserGroup, UserGroupArgs } from "../../provider/resource/user-group";

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** A member's type as a program or the engine resolves it: inputs unwrapped, no null or undefined. */
type Resolved<T> = NonNullable<pulumi.Unwrap<T>>;

describe("UserGroupArgs follows the input schema", () => {
  it("has exactly the schema's keys, the same ones required", () => {
    expectTypeOf<keyof UserGroupArgs>().toEqualTypeOf<keyof UserGroupInputs>();
    expectTypeOf<(typeof INPUT_KEYS)[number]>().toEqualTypeOf<keyof UserGroupInputs>();
    expectTypeOf<RequiredKeys<UserGroupArgs>>().toEqualTypeOf<RequiredKeys<z.input<typeof userGroupInputsSchema>>>();
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
  });
});
