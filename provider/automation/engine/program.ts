// The inline program: one UserGroup per group spec, its outputs by resource name
// (the stack's `groups` output), and what the engine answered for each group
// noted in process as it answers: a run needs no `pulumi stack output` after it.
import * as pulumi from "@pulumi/pulumi";
import type { Environment } from "../../wire/schemas";
import { UserGroup } from "../../resource/user-group";
import { type GroupSpec, userGroupArgsOf, resourceNameOf } from "../model";

/** What a run's program saw of one group once the engine answered. */
export interface ResolvedGroup {
  readonly name: string;
  readonly token: string;
  readonly teamId: number;
  readonly apiEnvironmentTag?: Environment;
}

/** One UserGroup of a spec, named by resourceNameOf. */
export function declareGroup(spec: GroupSpec): UserGroup {
  return new UserGroup(resourceNameOf(spec), userGroupArgsOf(spec));
}

/** Notes the group's outputs in `into` under its resource name once the engine has answered (never in a preview: unknown there). */
export function noteResolved(resourceName: string, group: UserGroup, into: Map<string, ResolvedGroup>): void {
  pulumi.all([group.name, group.token, group.teamId, group.apiEnvironmentTag]).apply(([name, token, teamId, apiEnvironmentTag]) => {
    into.set(resourceName, { name, token, teamId, ...(apiEnvironmentTag !== undefined ? { apiEnvironmentTag } : {}) });
  });
}

/** The program of a whole set: each run starts `resolved` afresh and fills it as the engine answers. */
export function programFor(specs: readonly GroupSpec[], resolved?: Map<string, ResolvedGroup>) {
  return async () => {
    resolved?.clear();
    const groups: Record<string, unknown> = {};
    for (const spec of specs) {
      const resourceName = resourceNameOf(spec);
      const group = declareGroup(spec);
      if (resolved) noteResolved(resourceName, group, resolved);
      groups[resourceName] = {
        userGroupId: group.userGroupId,
        name: group.name,
        token: group.token,
        teamId: group.teamId,
        apiEnvironmentTag: group.apiEnvironmentTag,
      };
    }
    return { groups };
  };
}
