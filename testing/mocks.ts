// Pulumi's unit-test mocks (pulumi.runtime.setMocks) that answer for UserGroup
// as the provider would: the checked inputs (mapping `{}`, adoptExisting false
// when absent), a token (64 hex digits, a secret output as in a real run), a
// team id, providedId and the environment tag. Other resources go to `fallback`
// (or are echoed back, Pulumi's usual mock).
import type * as pulumi from "@pulumi/pulumi";
import { randomBytes } from "node:crypto";
import type { Environment } from "../fake-server/index.js";
import { USER_GROUP_TYPE } from "../provider/resource/user-group.js";

type Mocks = pulumi.runtime.Mocks;
type MockResourceArgs = pulumi.runtime.MockResourceArgs;
type MockResourceResult = pulumi.runtime.MockResourceResult;

/** How the SDK marks a secret on the wire (its `specialSigKey` and `specialSecretSig`). */
const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export interface UserGroupMocksOptions {
  /** The environment the groups are in (their apiEnvironmentTag); default Customer. */
  readonly environment?: Environment;
  /** Fixed tokens and team ids by userGroupId (a token must be 64 lowercase hex digits). */
  readonly groups?: Readonly<Record<string, { token?: string; teamId?: number }>>;
  /** Mocks for every other resource and call (default: a resource's state is its inputs; a call returns its inputs). */
  readonly fallback?: Mocks;
}

/** A group the mocks made, for assertions. */
export interface MockedUserGroup {
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly name: string;
  readonly teamId: number;
}

/** Mocks for `pulumi.runtime.setMocks(mocks)`; `created()` lists the groups made so far (no tokens). */
export function userGroupMocks(options: UserGroupMocksOptions = {}): Mocks & { created(): MockedUserGroup[] } {
  const made: MockedUserGroup[] = [];
  let nextTeamId = 1;
  const used = new Set(Object.values(options.groups ?? {}).flatMap((g) => (g.teamId === undefined ? [] : [g.teamId])));
  return {
    newResource(args: MockResourceArgs): MockResourceResult | Promise<MockResourceResult> {
      if (args.type !== USER_GROUP_TYPE) return options.fallback?.newResource(args) ?? { id: `${args.name}-id`, state: args.inputs };
      const { __provider: _provider, ...inputs } = args.inputs as Record<string, unknown>;
      const userGroupId = String(inputs["userGroupId"]);
      const fixed = options.groups?.[userGroupId];
      let teamId = fixed?.teamId;
      if (teamId === undefined) {
        while (used.has(nextTeamId)) nextTeamId += 1;
        teamId = nextTeamId++;
        used.add(teamId);
      }
      const token = fixed?.token ?? randomBytes(32).toString("hex");
      made.push({ resourceName: args.name, userGroupId, name: String(inputs["name"]), teamId });
      return {
        id: userGroupId,
        state: {
          ...inputs,
          mapping: inputs["mapping"] ?? {},
          adoptExisting: inputs["adoptExisting"] ?? false,
          token: { [SECRET_SIG_KEY]: SECRET_SIG, value: token },
          teamId,
          providedId: userGroupId,
          apiEnvironmentTag: options.environment ?? "Customer",
        },
      };
    },
    call(args) {
      return options.fallback?.call(args) ?? args.inputs;
    },
    created: () => made.map((g) => ({ ...g })),
  };
}
