// Provider code comes from the installed package only. A dynamic resource's
// code lives in the state (`__provider`), and the engine runs the state's copy
// whenever it reads or deletes a resource: refresh, destroy, `up --refresh`,
// drift, and an up that deletes. A repository may hold the state (the default
// file backend is `.user-groups/state/`), so a pull request could plant code
// there that would run with the API key in its environment. Before any such
// run, every resource must be one this package makes, carrying the text this
// package writes (or a known earlier one): otherwise nothing runs.
import type { Deployment } from "@pulumi/pulumi/automation";
import { PROVIDER_MODULE_TEXT } from "../../resource/provider-shell";
import { USER_GROUP_TYPE } from "../../resource/user-group";
import { UserGroupsError } from "../../wire/errors";
import { nameOfUrn } from "../model";

/**
 * Every `__provider` text this package has written. Each only loads the
 * installed package's provider by name (none carries code of its own).
 */
export const KNOWN_PROVIDER_TEXTS: readonly string[] = [
  PROVIDER_MODULE_TEXT,
  // Before 0.1.0 (a21d9fe): the same, with a hint when the package is missing.
  'exports.handler=()=>{try{return require("node:module").createRequire(process.cwd()+"/_.js")' +
    '("pulumi-user-groups/provider-runtime").userGroupProvider}catch(e){throw new Error("pulumi-user-groups ' +
    'is not installed where this Pulumi program runs ("+process.cwd()+"): npm install pulumi-user-groups. "+e.message)}};',
];

/** The resource types a stack of ours holds. */
const OUR_TYPES = new Set(["pulumi:pulumi:Stack", "pulumi:providers:pulumi-nodejs", USER_GROUP_TYPE]);

/** At most this many resources are named in a message (the rest are counted). */
const NAMED = 20;

export interface UntrustedResource {
  /** The resource's name (its URN's last part), or its URN when it is not a group. */
  readonly name: string;
  readonly reason: "provider code" | "resource type";
}

interface RawResource {
  urn?: unknown;
  type?: unknown;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

function reasonOf(resource: RawResource): UntrustedResource["reason"] | undefined {
  if (typeof resource.type !== "string" || !OUR_TYPES.has(resource.type)) return "resource type";
  for (const props of [resource.inputs, resource.outputs]) {
    if (props === undefined || props === null || !Object.hasOwn(props, "__provider")) continue;
    const text = props.__provider;
    if (typeof text !== "string" || !KNOWN_PROVIDER_TEXTS.includes(text)) return "provider code";
  }
  return undefined;
}

/** The resources of a state (and of its pending operations) that this package did not write as they are. */
export function untrustedResources(deployment: Deployment["deployment"] | undefined): UntrustedResource[] {
  const raw = (deployment ?? {}) as { resources?: RawResource[]; pending_operations?: Array<{ resource?: RawResource }> };
  const all = [...(raw.resources ?? []), ...(raw.pending_operations ?? []).map((op) => op.resource ?? {})];
  const found: UntrustedResource[] = [];
  for (const resource of all) {
    const reason = reasonOf(resource);
    if (reason === undefined) continue;
    const urn = typeof resource.urn === "string" ? resource.urn : "(no urn)";
    const name = resource.type === USER_GROUP_TYPE && urn.includes("::") ? nameOfUrn(urn) : urn;
    if (!found.some((f) => f.name === name && f.reason === reason)) found.push({ name, reason });
  }
  return found;
}

/**
 * The state holds provider code (or resources) this package did not write: a
 * run that would load it is refused before the engine starts. The names are
 * JSON-quoted (they come from the state, which a pull request may have written).
 */
export class UntrustedProviderCodeError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly resources: readonly UntrustedResource[],
  ) {
    const named = resources.slice(0, NAMED).map((r) => `${JSON.stringify(r.name.slice(0, 300))} (${r.reason === "provider code" ? "its __provider is not this package's" : "a type this package never makes"})`);
    const more = resources.length > NAMED ? `, and ${resources.length - NAMED} more` : "";
    super(
      "untrusted_provider_code",
      `The state of stack "${stackName}" holds ${resources.length === 1 ? "a resource" : `${resources.length} resources`} whose code did not come from this package: ${named.join(", ")}${more}. ` +
        "The engine would run that code with the API key in its environment, so nothing was run. " +
        "Find out how it got there (a commit to the state?); after review, `user-groups recover --stack <stack> --rewrite-providers` " +
        "writes this package's own provider text back (a resource of a type this package never makes must be removed with `pulumi state delete`).",
    );
    this.name = "UntrustedProviderCodeError";
  }
}

/** Throws UntrustedProviderCodeError when the state holds code (or resources) this package did not write. */
export function assertOwnProviderCode(deployment: Deployment | undefined, stackName: string): void {
  const found = untrustedResources(deployment?.deployment);
  if (found.length > 0) throw new UntrustedProviderCodeError(stackName, found);
}

/** The state with every group's `__provider` set to this package's text (recover --rewrite-providers); the count rewritten. */
export function withOwnProviderCode(deployment: Deployment): { deployment: Deployment; rewritten: number } {
  let rewritten = 0;
  const fix = (resource: RawResource): RawResource => {
    if (resource.type !== USER_GROUP_TYPE) return resource;
    const out: RawResource = { ...resource };
    for (const key of ["inputs", "outputs"] as const) {
      const props = resource[key];
      if (props && Object.hasOwn(props, "__provider") && props.__provider !== PROVIDER_MODULE_TEXT) {
        out[key] = { ...props, __provider: PROVIDER_MODULE_TEXT };
        rewritten += 1;
      }
    }
    return out;
  };
  const inner = (deployment.deployment ?? {}) as { resources?: RawResource[]; pending_operations?: Array<{ resource?: RawResource }> };
  const fixed = {
    ...inner,
    ...(inner.resources ? { resources: inner.resources.map(fix) } : {}),
    ...(inner.pending_operations ? { pending_operations: inner.pending_operations.map((op) => (op.resource ? { ...op, resource: fix(op.resource) } : op)) } : {}),
  };
  return { deployment: { ...deployment, deployment: fixed }, rewritten };
}
