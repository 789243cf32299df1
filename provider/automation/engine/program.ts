// The inline Pulumi program: one UserGroup per group spec, its outputs by resource name.
import { UserGroup } from "../../resource/user-group";
import { type GroupSpec, userGroupArgsOf, resourceNameOf } from "../model";

/** One UserGroup of a spec, named by resourceNameOf. */
export function declareGroup(spec: GroupSpec): UserGroup {
  return new UserGroup(resourceNameOf(spec), userGroupArgsOf(spec));
}

export function programFor(specs: readonly GroupSpec[]) {
  return async () => {
    const groups: Record<string, unknown> = {};
    for (const spec of specs) {
      const resourceName = resourceNameOf(spec);
      const group = declareGroup(spec);
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
