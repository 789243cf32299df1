// A user's own stack: one group per tenant from config, each token exported as a secret.
import * as pulumi from "@pulumi/pulumi";
import { UserGroup } from "pulumi-user-groups";

const config = new pulumi.Config();
const tenants = config.getObject<string[]>("tenants") ?? ["acme", "globex"];

const groups = tenants.map(
  (tenant) =>
    new UserGroup(tenant, {
      name: `Tenant ${tenant}`,
      userGroupId: tenant,
      mapping: { sales: `warehouse-${tenant}` },
      properties: { plan: config.get("plan") ?? "basic" },
    }),
);

export const tokens = pulumi.secret(pulumi.all(groups.map((g) => g.token)));
export const teamIds = pulumi.all(groups.map((g) => g.teamId));
