// A state is data (CONTRACT F10). The engine acts on much of what a state
// holds, not only a dynamic resource's code (`__provider`, provider-code.ts): a
// provider resource's `__internal` (`pluginDownloadURL`, checksums,
// parameterization) or `version` makes it download and start a plugin, a
// resource's `provider` reference picks the provider that serves it, the
// `secrets_providers` entry picks what decrypts the state. A repository may
// hold the state (the default file backend is `.user-groups/state/`), and the
// engine starts what it loads with the API key and the passphrase in its
// environment. So before any engine run that reads a state, the whole state is
// checked here as data, by a pure function of the exported Deployment: every
// resource (and every pending operation's) must be one this package writes
// (the stack, the default `pulumi-nodejs` provider, UserGroups), with exactly
// the fields and value shapes the package writes, no more. Anything else is
// refused (`untrusted_state`; `untrusted_provider_code` when a group's
// `__provider` text is all that is wrong, which `recover --rewrite-providers`
// mends) naming the resource and the field, before the engine starts.
// Secrets pass as the engine stores them (ciphertext) or as an export with
// secrets shows them (plaintext, itself checked); a secret is never quoted.
import type { Deployment } from "@pulumi/pulumi/automation";
import { USER_GROUP_TYPE } from "../../../resource/user-group";
import { UserGroupsError } from "../../../wire/errors";
import { quoteForMessage } from "../../../wire/issues";
import { urnOf } from "../../model";
import { KNOWN_PROVIDER_TEXTS, UntrustedProviderCodeError } from "./provider-code";
import { PROJECT_NAME, stackSettingsName } from "../workspace";

export const STACK_TYPE = "pulumi:pulumi:Stack";
/** The provider resource of every dynamic resource: the engine's default one, as our programs get it. */
export const DYNAMIC_PROVIDER_TYPE = "pulumi:providers:pulumi-nodejs";

/** Pulumi's marker of a special value in a state (a secret, an asset, a resource reference...). */
const SIG_KEY = "4dabf18193072939515e22adb298388d";
/** The marker's value for a secret: the only special value this package's states hold. */
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

/** Deeper than any value of ours: a group's properties are at most 64 deep (wire schemas). */
const MAX_DEPTH = 80;
/** Problems collected at most (a state of 10,000 planted resources is told by its first ones). */
const MAX_PROBLEMS = 200;
/** At most this many problems are named in a message (the rest are counted). */
const NAMED = 20;
/** A field's path as a message names it, at most (a deep one is cut). */
const MAX_FIELD_CHARS = 200;

export interface StateProblem {
  /** The resource's URN as the state has it (outside data: never shown unquoted), or "" for the deployment itself. */
  readonly urn: string;
  /** Its type as the state has it (outside data), or "" when it has none. */
  readonly type: string;
  /** Where in the resource: `inputs.__internal`, `provider`, `outputs.properties.a`; keys from the state quoted. */
  readonly field: string;
  /** What is wrong with it. */
  readonly why: string;
}

// --- The checks: each looks at one value, and reports what is wrong at `at` ---

type Report = (at: string, why: string) => void;
type Check = (value: unknown, at: string, report: Report) => void;

/** A path segment: a plain key as it is, any other (outside data) quoted and cut. */
function segment(at: string, key: string): string {
  const part = /^[A-Za-z_$][\w$]{0,63}$/.test(key) ? key : `[${quoteForMessage(key)}]`;
  return at === "" ? part : part.startsWith("[") ? `${at}${part}` : `${at}.${part}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (isRecord(value)) return SIG_KEY in value ? "a special value (a secret, asset, archive or resource reference)" : "an object";
  return `a ${typeof value}`;
}

const string: Check = (value, at, report) => {
  if (typeof value !== "string") report(at, `is ${kindOf(value)}, not a string`);
};
const nonEmptyString: Check = (value, at, report) => {
  if (typeof value !== "string" || value === "") report(at, `is ${kindOf(value)}, not a non-empty string`);
};
const boolean: Check = (value, at, report) => {
  if (typeof value !== "boolean") report(at, `is ${kindOf(value)}, not true or false`);
};
const finiteNumber: Check = (value, at, report) => {
  if (typeof value !== "number" || !Number.isFinite(value)) report(at, `is ${kindOf(value)}, not a number`);
};

function exactly(expected: unknown, what: string): Check {
  return (value, at, report) => {
    if (value !== expected) report(at, `is not ${what}`);
  };
}

function oneOf(values: readonly unknown[], what: string): Check {
  return (value, at, report) => {
    if (!values.includes(value)) report(at, `is not ${what}`);
  };
}

function arrayOf(item: Check, max = Number.POSITIVE_INFINITY): Check {
  return (value, at, report) => {
    if (!Array.isArray(value)) return report(at, `is ${kindOf(value)}, not an array`);
    if (value.length > max) return report(at, max === 0 ? "is not empty (this package's resources depend on nothing)" : `holds more than ${max} items`);
    value.forEach((entry, index) => item(entry, `${at}[${index}]`, report));
  };
}

function recordOf(entry: Check): Check {
  return (value, at, report) => {
    if (!isRecord(value) || SIG_KEY in value) return report(at, `is ${kindOf(value)}, not an object`);
    for (const [key, field] of Object.entries(value)) entry(field, segment(at, key), report);
  };
}

/**
 * Plain JSON, nothing deeper than MAX_DEPTH, and no special value: no secret
 * either unless `secrets` (then checked as secret() does), never an asset, an
 * archive or a resource reference.
 */
function json(depth = 0, secrets = false): Check {
  return (value, at, report) => {
    if (depth > MAX_DEPTH) return report(at, `is nested deeper than ${MAX_DEPTH} levels`);
    if (value === null || typeof value === "string" || typeof value === "boolean") return;
    if (typeof value === "number") return finiteNumber(value, at, report);
    if (Array.isArray(value)) return value.forEach((entry, index) => json(depth + 1, secrets)(entry, `${at}[${index}]`, report));
    if (!isRecord(value)) return report(at, `is ${kindOf(value)}, not JSON`);
    if (SIG_KEY in value) {
      if (secrets && value[SIG_KEY] === SECRET_SIG) return secret(json(depth + 1, secrets))(value, at, report);
      return report(at, `is ${kindOf(value)}, which this package never writes here`);
    }
    for (const [key, field] of Object.entries(value)) json(depth + 1, secrets)(field, segment(at, key), report);
  };
}
const jsonValue = json();

interface FieldSpec {
  readonly check: Check;
  readonly required?: boolean;
}

/** An object with exactly these fields (the required ones present), each checked; any other field is a problem. */
function fields(spec: Readonly<Record<string, FieldSpec | Check>>): Check {
  return (value, at, report) => {
    if (!isRecord(value) || SIG_KEY in value) return report(at, `is ${kindOf(value)}, not an object`);
    for (const [key, field] of Object.entries(value)) {
      const known = Object.hasOwn(spec, key) ? spec[key] : undefined;
      if (known === undefined) report(segment(at, key), "is a field this package never writes");
      else (typeof known === "function" ? known : known.check)(field, segment(at, key), report);
    }
    for (const [key, field] of Object.entries(spec)) {
      if (typeof field !== "function" && field.required && !Object.hasOwn(value, key)) report(segment(at, key), "is missing");
    }
  };
}

function required(check: Check): FieldSpec {
  return { check, required: true };
}

/**
 * A secret as the engine stores it (`ciphertext`) or as an export with secrets
 * shows it (`plaintext`: the value's JSON, checked with `inner`). Its text is
 * never quoted in a problem.
 */
function secret(inner: Check): Check {
  return (value, at, report) => {
    if (!isRecord(value) || value[SIG_KEY] !== SECRET_SIG) return report(at, `is ${kindOf(value)}, not a secret`);
    const { [SIG_KEY]: _sig, ...rest } = value;
    const keys = Object.keys(rest);
    if (keys.length !== 1 || (keys[0] !== "ciphertext" && keys[0] !== "plaintext")) return report(at, "is a secret with fields this package never writes");
    if (typeof rest.ciphertext === "string") return;
    if (typeof rest.plaintext !== "string") return report(at, "is a secret whose text is not a string");
    let decoded: unknown;
    try {
      decoded = JSON.parse(rest.plaintext);
    } catch {
      return report(at, "is a secret whose plaintext is not JSON");
    }
    inner(decoded, at, (where, why) => report(where, `(inside a secret) ${why}`));
  };
}

/** The value as `check` wants it, or a secret of it (its plaintext checked with `check`). */
function orSecret(check: Check): Check {
  const hidden = secret(check);
  return (value, at, report) => (isRecord(value) && SIG_KEY in value ? hidden : check)(value, at, report);
}

function orNull(check: Check): Check {
  return (value, at, report) => {
    if (value !== null) check(value, at, report);
  };
}

// --- What this package writes ---

/** Fields the engine writes on every resource and acts on in no step. */
const BOOKKEEPING = {
  created: string,
  modified: string,
  sourcePosition: string,
  stackTrace: arrayOf(jsonValue),
} as const;

/** A group's inputs, as check stores them (provider/logic/inputs.ts), with the provider text. */
const GROUP_INPUT_FIELDS = {
  name: string,
  userGroupId: string,
  mapping: recordOf(string),
  properties: orNull(recordOf(jsonValue)),
  rotationTrigger: string,
  adoptExisting: boolean,
  profile: string,
} as const;

/** `__provider`: a text this package writes (told apart from other problems: recover --rewrite-providers mends it). */
const PROVIDER_TEXT_WHY = "is provider code this package did not write";
const providerText: Check = (value, at, report) => {
  if (typeof value !== "string" || !KNOWN_PROVIDER_TEXTS.includes(value)) report(at, PROVIDER_TEXT_WHY);
};

const groupInputs = fields({ ...GROUP_INPUT_FIELDS, __provider: required(providerText) });

/** What the provider returns (userGroupOutputsSchema), the token a secret. */
const groupOutputs = fields({
  ...GROUP_INPUT_FIELDS,
  token: orSecret(string),
  teamId: finiteNumber,
  providedId: string,
  apiEnvironmentTag: string,
  __provider: providerText,
});

/** The CLI's stack output `groups`: each group's outputs, by resource name (the token a secret). */
const groupsOutput = recordOf(
  fields({
    userGroupId: string,
    name: string,
    token: orSecret(string),
    teamId: finiteNumber,
    apiEnvironmentTag: string,
  }),
);

/** The stack's outputs: the CLI's `groups` (itself a secret when the engine keeps it whole), the fleet's marker. */
const stackOutputs = fields({
  groups: orSecret(groupsOutput),
  userGroupsFleet: exactly(true, "true"),
});

/** A config key of the project's namespace, as the engine hands the stack's config to the dynamic provider. */
const CONFIG_KEY = new RegExp(`^${PROJECT_NAME}:[A-Za-z0-9_.-]{1,200}$`);

/** The default provider's inputs and outputs: the project's config values (JSON, secrets anywhere), nothing else. */
const projectConfig: Check = (value, at, report) => {
  if (!isRecord(value) || SIG_KEY in value) return report(at, `is ${kindOf(value)}, not an object`);
  const configValue = json(0, true);
  for (const [key, field] of Object.entries(value)) {
    if (CONFIG_KEY.test(key)) configValue(field, segment(at, key), report);
    else report(segment(at, key), "is a field this package never writes");
  }
};

/** Where the state's resources must point: the stack's own URNs, and its default provider's reference. */
interface Expected {
  readonly stackUrn: string;
  readonly providerUrn: string;
  readonly groupUrnPrefix: string;
  /** `<provider URN>::<its id>` of the state's default provider, when it has one. */
  readonly providerRef: string | undefined;
}

function resourceCheck(type: unknown, expected: Expected, pending: boolean): Check | string {
  const urn = (what: string, ok: (value: string) => boolean): Check => (value, at, report) => {
    if (typeof value !== "string" || !ok(value)) report(at, `is not ${what}`);
  };
  /** Required, but optional in a pending operation's copy of the resource. */
  const or = (optional: boolean, check: Check): Check | FieldSpec => (optional ? check : required(check));
  const id = or(pending, nonEmptyString);
  switch (type) {
    case STACK_TYPE:
      return fields({
        urn: required(urn("this stack's own", (value) => value === expected.stackUrn)),
        custom: required(exactly(false, "false")),
        type: required(string),
        outputs: stackOutputs,
        ...BOOKKEEPING,
      });
    case DYNAMIC_PROVIDER_TYPE:
      return fields({
        urn: required(urn("this stack's default provider", (value) => value === expected.providerUrn)),
        custom: required(exactly(true, "true")),
        id,
        type: required(string),
        // The default provider of dynamic resources gets the stack's config of the project's namespace (`user-groups:baseUrl`,
        // `user-groups:apiKey` as a secret...), nothing else: a version, __internal, a download URL are not ours.
        inputs: projectConfig,
        outputs: projectConfig,
        ...BOOKKEEPING,
      });
    case USER_GROUP_TYPE:
      return fields({
        urn: required(urn("a URN of this stack's groups", (value) => value.startsWith(expected.groupUrnPrefix) && value.length > expected.groupUrnPrefix.length)),
        custom: required(exactly(true, "true")),
        id,
        type: required(string),
        inputs: required(groupInputs),
        outputs: pending ? groupOutputs : required(groupOutputs),
        // A pending operation's copy may lack them (the engine acts on none it lacks); where present, they must be ours.
        parent: or(pending, urn("this stack", (value) => value === expected.stackUrn)),
        provider: or(pending, urn("this stack's default provider", (value) => expected.providerRef !== undefined && value === expected.providerRef)),
        dependencies: arrayOf(string, 0),
        propertyDependencies: recordOf(arrayOf(string, 0)),
        additionalSecretOutputs: arrayOf(exactly("token", '"token"'), 1),
        // A replacement's old group, waiting for its delete (create-before-delete), or deleted first (delete-before-replace).
        delete: boolean,
        pendingReplacement: boolean,
        ...BOOKKEEPING,
      });
    default:
      return "is not a type this package makes";
  }
}

const manifest = fields({
  time: string,
  magic: string,
  version: string,
});

/** The passphrase secrets provider (the only one this package runs with): its salt, nothing the engine would call out to. */
const secretsProviders = fields({
  type: required(exactly("passphrase", '"passphrase"')),
  state: required(fields({ salt: required(string) })),
});

/** A pending operation the engine records around a step of ours. */
const PENDING_TYPES = ["creating", "updating", "deleting"] as const;

/**
 * What of a state this package did not write as it is: each problem names the
 * resource (its URN and type, outside data) and the field. Empty: the state is
 * only data this package writes. A pure function of the exported Deployment
 * (with or without its secrets shown).
 */
export function stateProblems(exported: Deployment | undefined, stackName: string): StateProblem[] {
  const problems: StateProblem[] = [];
  const at = (urn: string, type: string): Report => (field, why) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ urn, type, field, why });
  };
  if (exported === undefined) return problems;
  const top = at("", "");
  // A stack never written has an empty deployment; version 4 carries features this package never uses.
  if (exported.version !== 3 && !(exported.deployment == null && exported.version === undefined)) top("version", "is not 3, the state format this package writes");
  const deployment: unknown = exported.deployment ?? {};
  if (!isRecord(deployment)) {
    top("deployment", `is ${kindOf(deployment)}, not an object`);
    return problems;
  }
  const settings = stackSettingsName(stackName);
  const providerUrn = urnOf(settings, PROJECT_NAME, DYNAMIC_PROVIDER_TYPE, "default");
  const resources = Array.isArray(deployment.resources) ? (deployment.resources as unknown[]) : [];
  const pendingOps = Array.isArray(deployment.pending_operations) ? (deployment.pending_operations as unknown[]) : [];
  // The reference every group must carry: the one default provider the state holds.
  const providers = resources.filter((r) => isRecord(r) && r.type === DYNAMIC_PROVIDER_TYPE && r.urn === providerUrn) as Array<Record<string, unknown>>;
  const providerRef = providers.length === 1 && typeof providers[0]!.id === "string" ? `${providerUrn}::${providers[0]!.id}` : undefined;
  const expected: Expected = {
    stackUrn: urnOf(settings, PROJECT_NAME, STACK_TYPE, `${PROJECT_NAME}-${settings}`),
    providerUrn,
    groupUrnPrefix: urnOf(settings, PROJECT_NAME, USER_GROUP_TYPE, ""),
    providerRef,
  };

  fields({
    manifest: required(manifest),
    secrets_providers: secretsProviders,
    // What the engine notes of a snapshot that failed its integrity check (apitype SnapshotMetadataV1): text only.
    metadata: fields({ integrity_error: fields({ version: string, command: string, error: string }) }),
    resources: arrayOf(() => undefined),
    pending_operations: arrayOf(() => undefined),
  })(deployment, "", top);

  const seen = new Set<string>();
  const checkResource = (resource: unknown, index: string, pending: boolean) => {
    const urn = isRecord(resource) && typeof resource.urn === "string" ? resource.urn : "";
    const type = isRecord(resource) && typeof resource.type === "string" ? resource.type : "";
    const report = at(urn, type);
    if (!isRecord(resource)) return report(index, `is ${kindOf(resource)}, not a resource`);
    const check = resourceCheck(resource.type, expected, pending);
    if (typeof check === "string") return report("type", check);
    // A replacement's old copy (`delete: true`) shares its URN with the new one.
    if (!pending && resource.delete !== true) {
      if (seen.has(urn)) report("urn", "is held twice");
      seen.add(urn);
    }
    check(resource, "", report);
  };
  resources.forEach((resource, index) => checkResource(resource, `resources[${index}]`, false));
  if (providers.length > 1) at(providerUrn, DYNAMIC_PROVIDER_TYPE)("urn", "is held twice");
  pendingOps.forEach((op, index) => {
    const where = `pending_operations[${index}]`;
    if (!isRecord(op)) return top(where, `is ${kindOf(op)}, not a pending operation`);
    const resource = op.resource;
    const urn = isRecord(resource) && typeof resource.urn === "string" ? resource.urn : "";
    const type = isRecord(resource) && typeof resource.type === "string" ? resource.type : "";
    fields({ resource: required(() => undefined), type: required(oneOf(PENDING_TYPES, "creating, updating or deleting")) })(op, "pending operation", at(urn, type));
    checkResource(resource, where, true);
  });
  return problems;
}

/** Whether a problem is a group's `__provider` text (what `recover --rewrite-providers` mends). */
function isProviderText(problem: StateProblem): boolean {
  return problem.type === USER_GROUP_TYPE && /^(inputs|outputs)\.__provider$/.test(problem.field) && problem.why === PROVIDER_TEXT_WHY;
}

/** A problem as a message names it: the resource (its name and type, quoted), the field, why. */
function describe(problem: StateProblem): string {
  if (problem.urn === "" && problem.type === "") return `the deployment's ${problem.field}: ${problem.why}`;
  const parts = problem.urn.split("::");
  const name = parts.length >= 4 ? parts.slice(3).join("::") : problem.urn;
  // A field's path is ASCII already (state-data's segments quote every key from the state); only its length is bounded.
  const field = problem.field.length > MAX_FIELD_CHARS ? `${problem.field.slice(0, MAX_FIELD_CHARS)}...` : problem.field;
  return `${quoteForMessage(name)} (${problem.type === "" ? "no type" : quoteForMessage(problem.type)}) ${field}: ${problem.why}`;
}

/**
 * The state holds what this package never writes (a field the engine would act
 * on, a foreign resource, provider or reference): no engine run reads it.
 */
export class UntrustedStateError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly problems: readonly StateProblem[],
  ) {
    const named = problems.slice(0, NAMED).map(describe);
    const more = problems.length > NAMED ? `; and ${problems.length >= MAX_PROBLEMS ? "at least " : ""}${problems.length - NAMED} more` : "";
    super(
      "untrusted_state",
      `The state of stack "${stackName}" holds what this package never writes: ${named.join("; ")}${more}. ` +
        "The engine acts on such fields (it could fetch and start a plugin with the API key in its environment), so nothing was run and no request was sent. " +
        "Find out how it got there (a commit to the state?); then restore the state from a copy you trust (`pulumi stack import`), " +
        "or remove what this package did not make (`pulumi state delete <urn>`).",
    );
    this.name = "UntrustedStateError";
  }
}

/**
 * Throws unless the state is only data this package writes (see the top of this
 * file): UntrustedProviderCodeError when groups' `__provider` texts are all that
 * is wrong, else UntrustedStateError. Call it on the state the run will read,
 * before the engine starts.
 */
export function assertStateIsData(exported: Deployment | undefined, stackName: string): void {
  const problems = stateProblems(exported, stackName);
  if (problems.length === 0) return;
  if (problems.every(isProviderText)) {
    const names = [...new Set(problems.map((p) => p.urn.split("::").slice(3).join("::") || p.urn))];
    throw new UntrustedProviderCodeError(stackName, names.map((name) => ({ name, reason: "provider code" as const })));
  }
  throw new UntrustedStateError(stackName, problems);
}

/** The state, once assertStateIsData found it to be only data this package writes (for a read that feeds an engine run). */
export function checkedState(exported: Deployment, stackName: string): Deployment {
  assertStateIsData(exported, stackName);
  return exported;
}
