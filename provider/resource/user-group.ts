// The UserGroup resource as a Pulumi program declares it (CONTRACT.md).
import * as pulumi from "@pulumi/pulumi";
import type { Environment, JsonValue } from "../wire/schemas";
import { skipPulumiPromiseStacks } from "./promise-stacks";
import { PROVIDER_MODULE_TEXT } from "./provider-shell";

/** Pulumi runs this type with its Node.js dynamic-provider plugin (as pulumi.dynamic.Resource does). */
export const USER_GROUP_TYPE = "pulumi-nodejs:dynamic/pulumi-user-groups:UserGroup";

export interface UserGroupArgs {
  /** Display name of the group (1 to 255 characters, not blank). */
  name: pulumi.Input<string>;
  /** Your own id for the group; unique within an environment. A change replaces the group. */
  userGroupId: pulumi.Input<string>;
  /** Schema id -> data source (or the id you gave it). Strings only. Not returned by the API: drift cannot be seen. */
  mapping?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** Any JSON object; available as variables in dashboards and the SQL editor. */
  properties?: pulumi.Input<Record<string, pulumi.Input<JsonValue>>>;
  /** Any change rotates the token in place, e.g. the current month. */
  rotationTrigger?: pulumi.Input<string>;
  /** Adopt a group that already exists with this id instead of failing. */
  adoptExisting?: pulumi.Input<boolean>;
  /** Which API key to use (config user-groups:profiles.<profile> or USER_GROUPS_*_<PROFILE>). A change replaces the group. */
  profile?: pulumi.Input<string>;
}

/**
 * A user group of the embedded-dashboard service. A dynamic resource: it is
 * registered exactly as pulumi.dynamic.Resource registers one, but with a
 * provider module written by hand rather than serialized (see provider-shell.ts).
 */
export class UserGroup extends pulumi.CustomResource {
  declare readonly name: pulumi.Output<string>;
  declare readonly userGroupId: pulumi.Output<string>;
  declare readonly mapping: pulumi.Output<Record<string, string>>;
  declare readonly properties: pulumi.Output<Record<string, JsonValue> | undefined>;
  declare readonly rotationTrigger: pulumi.Output<string | undefined>;
  declare readonly adoptExisting: pulumi.Output<boolean>;
  declare readonly profile: pulumi.Output<string | undefined>;
  /** The group's token: always secret. Your app stores it to render the group's embedded dashboard. */
  declare readonly token: pulumi.Output<string>;
  /** The service's internal id of the group. */
  declare readonly teamId: pulumi.Output<number>;
  /** The service's echo of userGroupId. */
  declare readonly providedId: pulumi.Output<string>;
  /** The environment of the API key that manages the group. */
  declare readonly apiEnvironmentTag: pulumi.Output<Environment>;

  constructor(name: string, args: UserGroupArgs, opts?: pulumi.CustomResourceOptions) {
    const props = {
      ...args,
      token: undefined,
      teamId: undefined,
      providedId: undefined,
      apiEnvironmentTag: undefined,
    };
    // The SDK registers synchronously inside super(); see promise-stacks.ts.
    const restoreStackFormatting = skipPulumiPromiseStacks();
    try {
      super(USER_GROUP_TYPE, name, { ...props, __provider: PROVIDER_MODULE_TEXT }, {
        ...opts,
        additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), "token"],
      });
    } finally {
      restoreStackFormatting();
    }
  }
}
