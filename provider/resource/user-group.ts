// The UserGroup resource as a Pulumi program declares it (CONTRACT.md).
import * as pulumi from "@pulumi/pulumi";
import type { UserGroupInputs, UserGroupOutputs } from "../logic/inputs";
import { mapDeferredValues, reservedValueProblems, reservedValueProblemsAt } from "../logic/reserved-values";
import { assertNodeVersion } from "../node-version";
import { UserGroupsError } from "../wire/errors";
import { skipPulumiPromiseStacks } from "./promise-stacks";
import { PROVIDER_MODULE_TEXT } from "./provider-shell";
import { USER_GROUP_TYPE } from "./user-group-type";

export { USER_GROUP_TYPE } from "./user-group-type";

/** Each member may itself be a value, a promise or an output. */
export type InputMembers<T> = { [K in keyof T]: pulumi.Input<T[K]> };

/** The inputs' shape, from the schema `check` validates with (test/resource/shape.unit.test.ts proves the args follow it). */
type Shape = Required<UserGroupInputs>;

export interface UserGroupArgs {
  /** Display name of the group (1 to 255 characters, not blank). */
  name: pulumi.Input<Shape["name"]>;
  /** Your own id for the group; unique within an environment. A change replaces the group. */
  userGroupId: pulumi.Input<Shape["userGroupId"]>;
  /** Schema id -> data source (or the id you gave it). Strings only. Not returned by the API: drift cannot be seen. */
  mapping?: pulumi.Input<InputMembers<Shape["mapping"]>>;
  /** Any JSON object; available as variables in dashboards and the SQL editor. */
  properties?: pulumi.Input<InputMembers<NonNullable<Shape["properties"]>>>;
  /** Any change rotates the token in place, e.g. the current month. */
  rotationTrigger?: pulumi.Input<Shape["rotationTrigger"]>;
  /** Adopt a group that already exists with this id instead of failing. */
  adoptExisting?: pulumi.Input<Shape["adoptExisting"]>;
  /** Which API key to use (config user-groups:profiles.<profile> or USER_GROUPS_*_<PROFILE>). A change replaces the group. */
  profile?: pulumi.Input<Shape["profile"]>;
}

/**
 * Pulumi's `import` resource option on a UserGroup. The engine would ask the
 * dynamic-provider host to read the group without a provider module, and the host
 * crashes (`code must be a string, not undefined`); `adoptExisting` is the way in.
 */
export class ImportNotSupportedError extends UserGroupsError {
  constructor(readonly resourceName: string) {
    super(
      "import_not_supported",
      `UserGroup "${resourceName}": Pulumi's import option does not work for dynamic resources such as UserGroup. ` +
        "Remove it and set adoptExisting: true instead: the next pulumi up takes the existing group with this userGroupId " +
        "under management, keeps its token and sets its name, mapping and properties to the declared ones.",
    );
    this.name = "ImportNotSupportedError";
  }
}

/**
 * A value of the program's own that Pulumi would not read as data (an
 * unknown-value marker, a signature key, ...): the engine would drop it or read
 * it as something else. Outputs and promises are checked by the provider's check.
 */
export class ReservedInputError extends UserGroupsError {
  constructor(
    readonly resourceName: string,
    readonly problems: readonly string[],
  ) {
    super("reserved_value", `UserGroup "${resourceName}": ${problems.join("; ")}`);
    this.name = "ReservedInputError";
  }
}

/**
 * Marks an error the program cannot go on from as Pulumi's RunError (the SDK
 * recognises one by this flag, across copies of the SDK): Pulumi then prints
 * its message alone, without "unhandled exception" and a stack trace.
 */
function asRunError<T>(error: T): T {
  if (error instanceof UserGroupsError) Object.defineProperty(error, "__pulumiRunError", { value: true, enumerable: false });
  return error;
}

function isOutputOrPromise(value: object): boolean {
  return pulumi.Output.isInstance(value) || typeof (value as { then?: unknown }).then === "function";
}

/**
 * The args with each output and promise in them (at any depth) guarded: once
 * its value is known, that value is walked as the program's own literals are
 * (every unknown-value marker refused, with the path from the field down), and
 * a reserved one fails the resource before it is registered (the engine would
 * read the marker as a value not known yet and drop it: an empty object in
 * the state, a trigger left out, a name "required"). A value still unknown (a
 * preview of another resource's output) never reaches the guard: apply runs on
 * known values only, so it stays unknown, as before. Secrets stay secret, and
 * dependencies are kept (apply carries both).
 * @internal
 */
export function guardResolvedValues(resourceName: string, args: UserGroupArgs): Record<string, unknown> {
  return mapDeferredValues(args as unknown as Record<string, unknown>, isOutputOrPromise, (deferred, path, depth) =>
    pulumi.output(deferred).apply((resolved: unknown) => {
      const reserved = reservedValueProblemsAt(resolved, path, depth, { unknownValues: "refuse" });
      if (reserved.length > 0) throw asRunError(new ReservedInputError(resourceName, reserved.map((problem) => problem.message)));
      return resolved;
    }),
  );
}

/** The outputs' shape, from the schema of what the state holds. */
type Held = Required<UserGroupOutputs>;

/**
 * A user group of the embedded-dashboard service. A dynamic resource: it is
 * registered exactly as pulumi.dynamic.Resource registers one, but with a
 * provider module written by hand rather than serialized (see provider-shell.ts).
 */
export class UserGroup extends pulumi.CustomResource {
  declare readonly name: pulumi.Output<Held["name"]>;
  declare readonly userGroupId: pulumi.Output<Held["userGroupId"]>;
  declare readonly mapping: pulumi.Output<Held["mapping"]>;
  declare readonly properties: pulumi.Output<UserGroupOutputs["properties"]>;
  declare readonly rotationTrigger: pulumi.Output<UserGroupOutputs["rotationTrigger"]>;
  declare readonly adoptExisting: pulumi.Output<Held["adoptExisting"]>;
  declare readonly profile: pulumi.Output<UserGroupOutputs["profile"]>;
  /** The group's token: always secret. Your app stores it to render the group's embedded dashboard. */
  declare readonly token: pulumi.Output<Held["token"]>;
  /** The service's internal id of the group. */
  declare readonly teamId: pulumi.Output<Held["teamId"]>;
  /** The service's echo of userGroupId. */
  declare readonly providedId: pulumi.Output<Held["providedId"]>;
  /** The environment of the API key that manages the group. */
  declare readonly apiEnvironmentTag: pulumi.Output<Held["apiEnvironmentTag"]>;

  constructor(name: string, args: UserGroupArgs, opts?: pulumi.CustomResourceOptions) {
    try {
      // The program runs on the node Pulumi will start the dynamic provider with: a too old one is named before anything is registered.
      assertNodeVersion(`UserGroup "${name}": pulumi-user-groups`);
      // Before anything is registered; the import id is not quoted (it may be anything, a token included).
      if (opts?.import !== undefined) throw new ImportNotSupportedError(name);
      // A value the program wrote itself is plain data: every unknown marker is refused (a computed one is an output).
      const reserved = reservedValueProblems(args as unknown as Record<string, unknown>, { unknownValues: "refuse", skip: isOutputOrPromise });
      if (reserved.length > 0) throw new ReservedInputError(name, reserved.map((problem) => problem.message));
    } catch (error) {
      throw asRunError(error);
    }
    const props = {
      ...guardResolvedValues(name, args),
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
