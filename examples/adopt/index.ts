// Bringing groups that already exist (created by hand, by a script, or by a run
// whose state was lost) under management. Without `adoptExisting: true` creating
// them fails and changes nothing; with it, each is adopted (its token kept) and
// set to the declared name, mapping and properties.
import * as pulumi from "@pulumi/pulumi";
import { UserGroup } from "pulumi-user-groups";

const config = new pulumi.Config();
// The ids to adopt, e.g. `pulumi config set --path 'existing[0]' legacy-1`.
const existing = config.requireObject<string[]>("existing");

const groups = existing.map(
  (id) =>
    new UserGroup(id, {
      name: `Legacy ${id}`,
      userGroupId: id,
      properties: { managedBy: "pulumi" },
      adoptExisting: true,
    }),
);

export const tokens = pulumi.secret(pulumi.all(Object.fromEntries(groups.map((g, i) => [existing[i]!, g.token]))));
