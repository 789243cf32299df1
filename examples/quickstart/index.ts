// One user group, its token exported as a secret.
import * as pulumi from "@pulumi/pulumi";
import { UserGroup } from "pulumi-user-groups";

const config = new pulumi.Config();

const acme = new UserGroup("acme", {
  name: config.get("groupName") ?? "Acme Corp",
  userGroupId: "acme",
  mapping: { sales: "warehouse-eu" },
  properties: { region: "eu", seats: config.getNumber("seats") ?? 40 },
});

// Secret: shown as [secret]; read it with `pulumi stack output token --show-secrets`.
export const token = acme.token;
export const teamId = acme.teamId;
export const environment = acme.apiEnvironmentTag;
