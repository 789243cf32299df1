// When a preview (without refresh) can be answered from a stack's state alone:
// the state holds exactly the declared groups, each with the inputs the program
// would register after check, outputs the provider's diff finds nothing to
// change in, the resource options the program gives and nothing else (no
// pending operation, no resource marked for deletion, protected, tainted...).
// The engine would then run the program, check and diff every group with these
// same pure functions and report every group unchanged; at 10,000 groups that
// is 40 engines, programs and provider processes for a result known in advance
// (docs/performance.md, "Scale"). Anything this does not recognise, down to a
// resource field it does not know, means "ask the engine": a false "no" costs
// time, a false "yes" would hide a change, so only exact matches say yes.
import { isDeepStrictEqual } from "node:util";
import type { Deployment, EngineEvent } from "@pulumi/pulumi/automation";
import { z } from "zod";
import { diffUserGroup } from "../../../logic/diff";
import { checkInputs, type CheckedInputs } from "../../../logic/inputs";
import { PROVIDER_MODULE_TEXT } from "../../../resource/provider-shell";
import { USER_GROUP_TYPE } from "../../../resource/user-group";
import { type GroupSpec, userGroupArgsOf, resourceNameOf, urnOf } from "../../model";
import { PROJECT_NAME, stackSettingsName } from "../workspace";

/** Set to `always` to run the engine for every preview (the state is then never taken as proof). */
export const PREVIEW_ENGINE_ENV = "USER_GROUPS_PREVIEW_ENGINE";

const STACK_TYPE = "pulumi:pulumi:Stack";
const PROVIDER_TYPE = "pulumi:providers:pulumi-nodejs";

/** Fields every engine writes on a resource that no step depends on. */
const bookkeeping = {
  created: z.string().optional(),
  modified: z.string().optional(),
  sourcePosition: z.string().optional(),
  stackTrace: z.array(z.unknown()).optional(),
};

/** The state's root resource; strict: an unknown field (an option, a flag) means "ask the engine". */
const stackResourceSchema = z.strictObject({
  urn: z.string(),
  custom: z.literal(false),
  type: z.literal(STACK_TYPE),
  outputs: z.record(z.string(), z.unknown()).optional(),
  ...bookkeeping,
});

/** The default provider of dynamic resources, as the program gets it: no inputs of its own. */
const providerResourceSchema = z.strictObject({
  urn: z.string(),
  custom: z.literal(true),
  id: z.string().min(1),
  type: z.literal(PROVIDER_TYPE),
  inputs: z.strictObject({}).optional(),
  outputs: z.strictObject({}).optional(),
  ...bookkeeping,
});

/** A group as the program registers it: no options beyond the token's secrecy. */
const groupResourceSchema = z.strictObject({
  urn: z.string(),
  custom: z.literal(true),
  id: z.string().min(1),
  type: z.literal(USER_GROUP_TYPE),
  inputs: z.record(z.string(), z.unknown()),
  outputs: z.record(z.string(), z.unknown()),
  parent: z.string(),
  provider: z.string(),
  dependencies: z.array(z.string()).max(0).optional(),
  propertyDependencies: z.record(z.string(), z.array(z.string()).max(0)).optional(),
  additionalSecretOutputs: z.tuple([z.literal("token")]),
  ...bookkeeping,
});

const deploymentSchema = z.strictObject({
  manifest: z.unknown(),
  secrets_providers: z.unknown().optional(),
  metadata: z.unknown().optional(),
  pending_operations: z.array(z.unknown()).max(0).optional(),
  resources: z.array(z.object({ type: z.unknown() }).loose()).optional(),
});

/** What the state proves about a preview: nothing would change (with the engine's events for it), or why it cannot tell. */
export type StateProof = { readonly unchanged: true; readonly events: EngineEvent[] } | { readonly unchanged: false; readonly why: string };

function no(why: string): StateProof {
  return { unchanged: false, why };
}

/** Where a state failed its schema: the field's path, or the fields it does not know. */
function whereIn(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "a shape";
  const at = issue.path.map(String).join(".");
  const unknown = issue.code === "unrecognized_keys" ? issue.keys.join(", ") : "";
  return [at, unknown].filter((part) => part !== "").join(": ") || "a shape";
}

/** The inputs the engine would store for `spec`: what the program sends (declareGroup's args as JSON), checked, plus the provider module. */
function expectedInputs(spec: GroupSpec): Record<string, unknown> | undefined {
  const sent = JSON.parse(JSON.stringify(userGroupArgsOf(spec))) as Record<string, unknown>;
  const checked = checkInputs(sent);
  return checked.ok ? { ...checked.inputs, __provider: PROVIDER_MODULE_TEXT } : undefined;
}

/**
 * Whether a preview of `specs` on `stack` would change nothing, judged from the
 * stack's exported state alone (see the top of this file). `deployment` is
 * exportState's result (state-document.ts): reading it checked the passphrase, so a
 * wrong passphrase has already failed as it would in the engine.
 */
export function proveUnchanged(deployment: Deployment, stack: string, specs: readonly GroupSpec[]): StateProof {
  if (deployment.version !== 3) return no(`state version ${String(deployment.version)}`);
  const parsed = deploymentSchema.safeParse(deployment.deployment);
  if (!parsed.success) return no(`the state has ${whereIn(parsed.error)} as this library does not write it (pending operations, or a newer format)`);
  const resources = parsed.data.resources ?? [];
  if (resources.length !== specs.length + 2) return no(`the state holds ${resources.length} resources, the program would declare ${specs.length + 2}`);

  const name = stackSettingsName(stack);
  const stackUrn = urnOf(name, PROJECT_NAME, STACK_TYPE, `${PROJECT_NAME}-${name}`);
  const providerUrn = urnOf(name, PROJECT_NAME, PROVIDER_TYPE, "default");
  let stackSeen = false;
  let providerRef: string | undefined;
  const groups = new Map<string, z.infer<typeof groupResourceSchema>>();
  for (const resource of resources) {
    if (resource.type === STACK_TYPE) {
      const root = stackResourceSchema.safeParse(resource);
      if (!root.success || root.data.urn !== stackUrn || stackSeen) return no("the stack resource is not the program's");
      stackSeen = true;
    } else if (resource.type === PROVIDER_TYPE) {
      const provider = providerResourceSchema.safeParse(resource);
      if (!provider.success || provider.data.urn !== providerUrn || providerRef !== undefined) return no("the provider resource is not the program's default one");
      providerRef = `${providerUrn}::${provider.data.id}`;
    } else {
      const group = groupResourceSchema.safeParse(resource);
      if (!group.success) return no(`a resource has ${whereIn(group.error)} as the program does not give it (an option, a flag, or another type)`);
      if (groups.has(group.data.urn)) return no("a group is held twice");
      groups.set(group.data.urn, group.data);
    }
  }
  if (!stackSeen || providerRef === undefined) return no("the state has no stack or provider resource");

  const events: EngineEvent[] = [];
  const now = Math.floor(Date.now() / 1000);
  for (const spec of specs) {
    const urn = urnOf(name, PROJECT_NAME, USER_GROUP_TYPE, resourceNameOf(spec));
    const held = groups.get(urn);
    if (held === undefined) return no(`${resourceNameOf(spec)} is not in the state`);
    if (held.parent !== stackUrn || held.provider !== providerRef) return no(`${resourceNameOf(spec)} has another parent or provider`);
    const inputs = expectedInputs(spec);
    if (inputs === undefined || !isDeepStrictEqual(held.inputs, inputs)) return no(`${resourceNameOf(spec)}'s inputs differ`);
    if (diffUserGroup(held.outputs as Partial<CheckedInputs>, inputs as unknown as CheckedInputs).changes) return no(`${resourceNameOf(spec)} differs from its outputs`);
    // What the engine reports for a group a preview leaves as it is.
    events.push({ sequence: events.length, timestamp: now, resOutputsEvent: { metadata: { op: "same", urn, type: USER_GROUP_TYPE, provider: providerRef }, planning: true } });
  }
  return { unchanged: true, events };
}
