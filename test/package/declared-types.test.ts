// The package's public types are written out (provider/wire/schemas.ts says why:
// its declarations must not mention zod). The zod schemas stay the source of
// truth: each written-out type must equal what its schema infers, checked by
// `npm run typecheck` (part of `npm test`'s pretest). The runtime half checks that
// the schemas tagged @internal really are gone from the shipped declarations.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
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

describe("the shipped declarations", () => {
  const DIST = path.resolve(__dirname, "../../dist");

  function declarationFiles(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return declarationFiles(full);
      return entry.name.endsWith(".d.ts") ? [full] : [];
    });
  }

  /** Every .d.ts a program that imports the package's entry points loads, following relative imports. */
  function reachableDeclarations(entries: readonly string[]): Set<string> {
    const seen = new Set<string>();
    const queue = entries.map((entry) => path.join(DIST, entry));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const match of readFileSync(file, "utf8").matchAll(/(?:from|import\()\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, "");
        // A folder (`./rate-budget`, `./lease`) resolves to its index.d.ts, as TypeScript resolves it.
        queue.push(target.endsWith(".d.ts") ? target : existsSync(`${target}.d.ts`) ? `${target}.d.ts` : path.join(target, "index.d.ts"));
      }
    }
    return seen;
  }

  it("never mention zod in what a program loads from any entry point", () => {
    const reachable = reachableDeclarations([
      "provider/index.d.ts",
      "provider/automation/index.d.ts",
      "fake-server/index.d.ts",
      "provider/resource/runtime.d.ts",
    ]);
    expect(reachable.size).toBeGreaterThan(20);
    const mentioningZod = [...reachable].filter((file) => /from "zod"|import\("zod"\)/.test(readFileSync(file, "utf8")));
    expect(mentioningZod.map((file) => path.relative(DIST, file))).toEqual([]);
  });

  it("leave out the @internal schemas", () => {
    const schemas = readFileSync(path.join(DIST, "provider/wire/schemas.d.ts"), "utf8");
    expect(schemas).not.toContain("getUserRequestSchema");
    expect(schemas).toContain("export interface GetUserRequest");
    expect(declarationFiles(DIST).length).toBeGreaterThan(20);
  });
});
