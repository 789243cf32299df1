// The package's public types are written out (provider/wire/schemas.ts says why:
// its declarations must not mention zod). The zod schemas stay the source of
// truth: each written-out type must equal what its schema infers. A type test
// (vitest's typecheck, the "types" project of vitest.config.mts: tsc reports each
// failed assertion as this test's failure; `npm run typecheck` checks it too).
// The shipped declarations' half: declared-types.test.ts.
import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type * as auth from "../../fake-server/auth";
import type * as faults from "../../fake-server/faults";
import type * as options from "../../fake-server/options";
import type * as seed from "../../fake-server/seed";
import type * as store from "../../fake-server/store";
import type * as groupsSpec from "../../provider/automation/model/groups-spec";
import type * as inputs from "../../provider/logic/inputs";
import type * as wire from "../../provider/wire/schemas";
import type { Validator } from "../../provider/wire/schemas";

describe("written-out types equal their zod schemas", () => {
  it("wire format", () => {
    expectTypeOf<wire.Environment>().toEqualTypeOf<z.infer<typeof wire.environmentSchema>>();
    expectTypeOf<wire.Mapping>().toEqualTypeOf<z.infer<typeof wire.mappingSchema>>();
    expectTypeOf<wire.Properties>().toEqualTypeOf<z.infer<typeof wire.jsonObjectSchema>>();
    expectTypeOf<wire.GetUserRequest>().toEqualTypeOf<z.infer<typeof wire.getUserRequestSchema>>();
    expectTypeOf<wire.UpdateUserRequest>().toEqualTypeOf<z.infer<typeof wire.updateUserRequestSchema>>();
    expectTypeOf<wire.RotateTokenRequest>().toEqualTypeOf<z.infer<typeof wire.rotateTokenRequestSchema>>();
    expectTypeOf<wire.DeleteUserRequest>().toEqualTypeOf<z.infer<typeof wire.deleteUserRequestSchema>>();
    expectTypeOf<wire.UserGroupView>().toEqualTypeOf<z.infer<typeof wire.userGroupViewSchema>>();
    expectTypeOf<wire.GetUserResponse>().toEqualTypeOf<z.infer<typeof wire.getUserResponseSchema>>();
    expectTypeOf<wire.UpdateUserResponse>().toEqualTypeOf<z.infer<typeof wire.updateUserResponseSchema>>();
    expectTypeOf<wire.RotateTokenResponse>().toEqualTypeOf<z.infer<typeof wire.rotateTokenResponseSchema>>();
    expectTypeOf<wire.DeleteUserResponse>().toEqualTypeOf<z.infer<typeof wire.deleteUserResponseSchema>>();
    expectTypeOf<wire.ServiceErrorCode>().toEqualTypeOf<z.infer<typeof wire.errorCodeSchema>>();
    expectTypeOf<wire.ErrorResponse>().toEqualTypeOf<z.infer<typeof wire.errorResponseSchema>>();
  });

  it("a UserGroup's inputs and outputs, and a group spec", () => {
    expectTypeOf<inputs.UserGroupInputs>().toEqualTypeOf<z.infer<typeof inputs.userGroupInputsSchema>>();
    expectTypeOf<inputs.CheckedInputs>().toEqualTypeOf<z.infer<typeof inputs.checkedInputsSchema>>();
    expectTypeOf<inputs.UserGroupOutputs>().toEqualTypeOf<z.infer<typeof inputs.userGroupOutputsSchema>>();
    expectTypeOf<groupsSpec.GroupSpec>().toEqualTypeOf<z.infer<typeof groupsSpec.groupSpecSchema>>();
    expectTypeOf<typeof groupsSpec.groupSpecSchema>().toExtend<Validator<groupsSpec.GroupSpec>>();
  });

  it("the fake server's options, keys, fault rules and stored groups", () => {
    expectTypeOf<auth.ApiKeyConfig>().toEqualTypeOf<z.infer<typeof auth.apiKeyConfigSchema>>();
    expectTypeOf<faults.FaultRule>().toEqualTypeOf<z.infer<typeof faults.faultRuleSchema>>();
    expectTypeOf<faults.FaultRuleInput>().toEqualTypeOf<z.input<typeof faults.faultRuleSchema>>();
    expectTypeOf<typeof faults.faultRuleSchema>().toExtend<Validator<faults.FaultRule>>();
    expectTypeOf<options.FakeServerOptions>().toEqualTypeOf<z.input<typeof options.fakeServerOptionsSchema>>();
    expectTypeOf<options.ResolvedOptions>().toEqualTypeOf<z.output<typeof options.fakeServerOptionsSchema>>();
    expectTypeOf<store.StoredGroup>().toEqualTypeOf<z.infer<typeof store.storedGroupSchema>>();
    expectTypeOf<store.Snapshot>().toEqualTypeOf<z.infer<typeof store.snapshotSchema>>();
    expectTypeOf<seed.SeedGroup>().toEqualTypeOf<z.infer<typeof seed.seedGroupSchema>>();
  });
});
