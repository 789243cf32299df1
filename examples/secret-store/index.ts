// A user group's token, written straight into AWS Secrets Manager: the app that renders
// the group's embedded dashboard reads it from there, and nobody copies it by hand.
// The token stays a secret output end to end: encrypted in Pulumi's state, sent to AWS
// over its API, never printed.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { UserGroup } from "pulumi-user-groups";

const config = new pulumi.Config();

const acme = new UserGroup("acme", {
  name: config.get("groupName") ?? "Acme Corp",
  userGroupId: "acme",
  // A new value rotates the token in place; the secret below gets the new one in the same run.
  rotationTrigger: config.get("period") ?? "initial",
});

const secret = new aws.secretsmanager.Secret("acme-dashboard-token", {
  name: `user-groups/${pulumi.getStack()}/acme`,
  description: "Embedded-dashboard token of user group acme (managed by pulumi-user-groups)",
  recoveryWindowInDays: 7,
});

// A rotation of the group's token writes a new version; the app reads AWSCURRENT.
new aws.secretsmanager.SecretVersion("acme-dashboard-token", {
  secretId: secret.id,
  secretString: pulumi.jsonStringify({ userGroupId: acme.userGroupId, teamId: acme.teamId, token: acme.token }),
});

export const secretArn = secret.arn;
export const teamId = acme.teamId;
