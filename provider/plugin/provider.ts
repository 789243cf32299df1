// The `user-groups` provider plugin's Provider: Pulumi's provider protocol
// (through @pulumi/pulumi/provider) on one side, the same lifecycle as the
// dynamic provider (logic/lifecycle.ts) on the other. What is particular to a
// plugin lives here: the type token, secrets on the wire, and import (a read
// with nothing but the id).
import type * as pulumiProvider from "@pulumi/pulumi/provider";
import type { ConfigLookup } from "../logic/credentials";
import { PROCESS_ENVIRONMENT, type ProviderEnvironment, UserGroupLifecycle } from "../logic/lifecycle";
import { PACKAGE_VERSION } from "../version";
import { UserGroupsError } from "../wire/errors";
import { packageSchema, USER_GROUP_TOKEN } from "./schema";
import { type Props, unwrapSecrets, wrapSecrets } from "./secrets";

export class UnknownResourceTypeError extends UserGroupsError {
  constructor(urn: string) {
    super("unknown_resource_type", `The user-groups provider manages ${USER_GROUP_TOKEN} only, not the resource ${urn}.`);
    this.name = "UnknownResourceTypeError";
  }
}

/** The type token in a URN (`urn:pulumi:stack::project::[parent$]type::name`). */
function typeOf(urn: string): string {
  const parts = urn.split("::");
  return (parts[2] ?? "").split("$").at(-1) ?? "";
}

function assertUserGroup(urn: string): void {
  if (typeOf(urn) !== USER_GROUP_TOKEN) throw new UnknownResourceTypeError(urn);
}

/** The token, and whatever the program gave as a secret, leave as secrets. */
function secretOutputs(outs: object, secretInputs: ReadonlySet<string>): Props {
  return wrapSecrets(outs, ["token", ...secretInputs]);
}

/** What `pulumi import` writes into a program: the inputs that matter, without defaults. */
function importedInputs(inputs: Props): Props {
  const trimmed: Props = { ...inputs };
  if (trimmed.adoptExisting === false) delete trimmed.adoptExisting;
  const mapping = trimmed.mapping;
  if (mapping !== null && typeof mapping === "object" && Object.keys(mapping).length === 0) delete trimmed.mapping;
  return trimmed;
}

export class UserGroupPluginProvider implements pulumiProvider.Provider {
  readonly version = PACKAGE_VERSION;
  private readonly lifecycle: UserGroupLifecycle;

  constructor(surroundings: ProviderEnvironment = PROCESS_ENVIRONMENT) {
    this.lifecycle = new UserGroupLifecycle(surroundings);
  }

  /** Stack config of the `user-groups` namespace, from the engine's Configure call (configure.ts). */
  configure(config: ConfigLookup): void {
    this.lifecycle.configure(config);
  }

  async getSchema(): Promise<string> {
    return JSON.stringify(packageSchema(this.version));
  }

  async check(urn: string, _olds: Props, news: Props): Promise<pulumiProvider.CheckResult> {
    assertUserGroup(urn);
    const { plain, secretKeys } = unwrapSecrets(news);
    const result = this.lifecycle.check(plain);
    if (!result.ok) return { inputs: news, failures: result.failures };
    return { inputs: wrapSecrets(result.inputs, secretKeys) };
  }

  async diff(_id: string, urn: string, olds: Props, news: Props): Promise<pulumiProvider.DiffResult> {
    assertUserGroup(urn);
    const outcome = this.lifecycle.diff(unwrapSecrets(olds).plain, unwrapSecrets(news).plain);
    return { changes: outcome.changes, replaces: outcome.replaces, deleteBeforeReplace: outcome.deleteBeforeReplace };
  }

  async create(urn: string, inputs: Props): Promise<pulumiProvider.CreateResult> {
    assertUserGroup(urn);
    const { plain, secretKeys } = unwrapSecrets(inputs);
    const outs = await this.lifecycle.create(plain);
    return { id: outs.userGroupId, outs: secretOutputs(outs, secretKeys) };
  }

  /**
   * Refresh (the state as props) and import (no props: the id is the
   * userGroupId, read with the default profile's credentials).
   */
  async read(id: string, urn: string, props?: Props): Promise<pulumiProvider.ReadResult> {
    assertUserGroup(urn);
    const { plain, secretKeys } = unwrapSecrets(props);
    const importing = plain.userGroupId === undefined;
    const held = importing ? { name: id, userGroupId: id, mapping: {}, adoptExisting: false } : plain;
    const outcome = await this.lifecycle.read(held);
    // A blank id tells the engine the group is gone.
    if (!outcome.found) return { id: "", props: {} };
    const inputs = importing ? importedInputs({ ...outcome.inputs }) : outcome.inputs;
    return { id, props: secretOutputs(outcome.outputs, secretKeys), inputs: wrapSecrets(inputs, secretKeys) };
  }

  async update(_id: string, urn: string, olds: Props, news: Props): Promise<pulumiProvider.UpdateResult> {
    assertUserGroup(urn);
    const { plain, secretKeys } = unwrapSecrets(news);
    const outs = await this.lifecycle.update(unwrapSecrets(olds).plain, plain);
    return { outs: secretOutputs(outs, secretKeys) };
  }

  async delete(_id: string, urn: string, props: Props): Promise<void> {
    assertUserGroup(urn);
    await this.lifecycle.delete(unwrapSecrets(props).plain);
  }
}
