// Provider code comes from the installed package only. A dynamic resource's
// code lives in the state (`__provider`), and the engine runs the state's copy
// whenever it reads or deletes a resource: refresh, destroy, `up --refresh`,
// drift, and an up that deletes. A repository may hold the state (the default
// file backend is `.user-groups/state/`), so a pull request could plant code
// there that would run with the API key in its environment. Every `__provider`
// must be a text this package writes (or a known earlier one), checked with the
// rest of the state before any engine run (state-data.ts); this file holds
// those texts, the refusal when they are all that is wrong, and the rewrite
// `recover --rewrite-providers` makes after review.
import type { Deployment } from "@pulumi/pulumi/automation";
import { PROVIDER_MODULE_TEXT } from "../../../resource/provider-shell";
import { USER_GROUP_TYPE } from "../../../resource/user-group";
import { UserGroupsError } from "../../../wire/errors";
import { quoteForMessage } from "../../../wire/issues";

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

/** At most this many resources are named in a message (the rest are counted). */
const NAMED = 20;

export interface UntrustedResource {
  /** The resource's name (its URN's last part), or its URN when it is not a group. */
  readonly name: string;
  /** Why: its `__provider` (a type this package never makes is an UntrustedStateError now, state-data.ts). */
  readonly reason: "provider code" | "resource type";
}

interface RawResource {
  urn?: unknown;
  type?: unknown;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

/**
 * Groups of the state hold provider code this package did not write, and the
 * state holds nothing else of the kind (state-data.ts): a run that would load
 * it is refused before the engine starts. The names are quoted, every character
 * outside printable ASCII escaped (they come from the state, which a pull
 * request may have written).
 */
export class UntrustedProviderCodeError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly resources: readonly UntrustedResource[],
  ) {
    const named = resources.slice(0, NAMED).map((r) => `${quoteForMessage(r.name)} (${r.reason === "provider code" ? "its __provider is not this package's" : "a type this package never makes"})`);
    const more = resources.length > NAMED ? `, and ${resources.length - NAMED} more` : "";
    super(
      "untrusted_provider_code",
      `The state of stack "${stackName}" holds ${resources.length === 1 ? "a resource" : `${resources.length} resources`} whose code did not come from this package: ${named.join(", ")}${more}. ` +
        "The engine would run that code with the API key in its environment, so nothing was run. " +
        "Find out how it got there (a commit to the state?); after review, `user-groups recover --stack <stack> --rewrite-providers` " +
        "writes this package's own provider text back.",
    );
    this.name = "UntrustedProviderCodeError";
  }
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
