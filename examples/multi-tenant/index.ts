// Groups declared from a data file: one UserGroup per tenant and environment.
import * as pulumi from "@pulumi/pulumi";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { UserGroup } from "pulumi-user-groups";

interface Tenant {
  id: string;
  name: string;
  mapping?: Record<string, string>;
  properties?: Record<string, string | number | boolean>;
  /** Profiles: stack config user-groups:profiles.<profile>.{baseUrl,apiKey}. */
  environments: string[];
}

const config = new pulumi.Config();
const file = config.get("tenantsFile") ?? "tenants.yaml";
const { tenants } = yaml.load(readFileSync(path.resolve(__dirname, file), "utf8")) as { tenants: Tenant[] };

const tokens: Record<string, pulumi.Output<string>> = {};
const environments: Record<string, pulumi.Output<string>> = {};
for (const tenant of tenants) {
  for (const profile of tenant.environments) {
    const key = `${tenant.id}-${profile}`;
    const group = new UserGroup(key, {
      name: tenant.name,
      userGroupId: tenant.id,
      mapping: tenant.mapping,
      properties: tenant.properties,
      profile,
    });
    tokens[key] = group.token;
    environments[key] = group.apiEnvironmentTag;
  }
}

// One secret map: `pulumi stack output tokens --show-secrets`.
export const groupTokens = pulumi.secret(pulumi.all(tokens));
export const groupEnvironments = pulumi.all(environments);
