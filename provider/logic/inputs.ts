// The UserGroup resource's inputs and outputs (camelCase, as a Pulumi user
// writes them), validated by `check` before any request is sent (R1).
import { z } from "zod";
import { type Environment, environmentSchema, jsonObjectSchema, mappingSchema, nameSchema, teamIdSchema, tokenSchema, userGroupIdSchema, type Mapping, type Properties } from "../wire/schemas";
import { formatIssue, issuePath, WORDED_ISSUES } from "../wire/issues";
import { reservedValueProblems, UNKNOWN_VALUE } from "./reserved-values";

export { UNKNOWN_VALUE } from "./reserved-values";

/** @internal Profile names become parts of env var names (USER_GROUPS_API_KEY_<P>), so they stay simple. */
export const profileSchema = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, "must start with a letter and hold only letters, digits, '-' and '_' (at most 64)");

/**
 * @internal
 * A UserGroup's inputs as a program declares them: the one source of their
 * shape. The checked inputs, the outputs, the key list and (by a type test,
 * test/resource/shape.unit.test.ts) the resource's args follow from it.
 */
export const userGroupInputsSchema = z.object({
  name: nameSchema,
  userGroupId: userGroupIdSchema,
  mapping: mappingSchema.optional(),
  properties: jsonObjectSchema.nullable().optional(),
  rotationTrigger: z.string().optional(),
  adoptExisting: z.boolean().optional(),
  profile: profileSchema.optional(),
});
// What userGroupInputsSchema infers, written out (provider/wire/schemas.ts says why).
/** A user group as a program, a groups file or a fleet call declares it. */
export interface UserGroupInputs {
  /** The group's display name: 1 to 255 characters, not blank. */
  name: string;
  /** Your own id of the group (1 to 255 characters); a change replaces the group. */
  userGroupId: string;
  /** String keys to string values (at most 256 keys). The API never returns it, so its drift cannot be seen. */
  mapping?: Mapping | undefined;
  /** A JSON object stored with the group; `null` clears it. */
  properties?: Properties | null | undefined;
  /** Any change rotates the group's token in place. */
  rotationTrigger?: string | undefined;
  /** Take over a group whose `userGroupId` already exists instead of failing (keeps its token). */
  adoptExisting?: boolean | undefined;
  /** Which API key (and so which environment) manages the group; a change replaces the group. */
  profile?: string | undefined;
}

/** @internal Inputs after check: defaults filled in so that `{}` and an absent mapping compare equal. */
export const checkedInputsSchema = userGroupInputsSchema.extend({
  mapping: mappingSchema,
  properties: jsonObjectSchema.optional(),
  adoptExisting: z.boolean(),
});
/** Inputs after check: defaults filled in so that `{}` and an absent mapping compare equal. */
export interface CheckedInputs {
  name: string;
  userGroupId: string;
  mapping: Mapping;
  properties?: Properties | undefined;
  rotationTrigger?: string | undefined;
  adoptExisting: boolean;
  profile?: string | undefined;
}

/** @internal What the state holds for a group: the checked inputs plus what the service told us. */
export const userGroupOutputsSchema = checkedInputsSchema.extend({
  token: tokenSchema,
  teamId: teamIdSchema,
  providedId: z.string(),
  apiEnvironmentTag: environmentSchema.optional(),
});
/** What the state holds for a group: the checked inputs plus what the service told us. */
export interface UserGroupOutputs extends CheckedInputs {
  token: string;
  teamId: number;
  providedId: string;
  apiEnvironmentTag?: Environment | undefined;
}

/** The input keys, in declaration order. */
export const INPUT_KEYS = userGroupInputsSchema.keyof().options;

export interface CheckFailure {
  property: string;
  reason: string;
}

export type CheckResult = { ok: true; inputs: CheckedInputs } | { ok: false; failures: CheckFailure[] };

/** Drops Pulumi's bookkeeping (`__provider`) and unknown input keys. */
function pickInputs(raw: Record<string, unknown>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const key of INPUT_KEYS) if (raw[key] !== undefined) picked[key] = raw[key];
  return picked;
}

function containsUnknown(value: unknown): boolean {
  if (value === UNKNOWN_VALUE) return true;
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (value !== null && typeof value === "object") return Object.values(value).some(containsUnknown);
  return false;
}

/** Properties are JSON: what JSON cannot say (-0, undefined members) is normalised away, as the service would. */
function asJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export function normalizeInputs(inputs: UserGroupInputs): CheckedInputs {
  const checked: CheckedInputs = {
    name: inputs.name,
    userGroupId: inputs.userGroupId,
    mapping: inputs.mapping ?? {},
    adoptExisting: inputs.adoptExisting ?? false,
  };
  if (inputs.properties !== undefined && inputs.properties !== null) checked.properties = asJson(inputs.properties);
  if (inputs.rotationTrigger !== undefined) checked.rotationTrigger = inputs.rotationTrigger;
  if (inputs.profile !== undefined) checked.profile = inputs.profile;
  return checked;
}

/**
 * The input schema with the required fields still unknown (preview) made
 * optional. Built once per variant: zod compiles a schema on its first parse,
 * and check runs once per resource per operation (docs/performance.md, fix 3).
 */
const schemaVariants = new Map<string, z.ZodType>();
function schemaFor(nameUnknown: boolean, idUnknown: boolean): z.ZodType {
  const key = `${nameUnknown}/${idUnknown}`;
  let schema = schemaVariants.get(key);
  if (schema === undefined) {
    schema = userGroupInputsSchema.partial({ ...(nameUnknown ? { name: true } : {}), ...(idUnknown ? { userGroupId: true } : {}) });
    schemaVariants.set(key, schema);
  }
  return schema;
}

/**
 * Validates every input; each failure names the property and the rule it broke.
 * Values still unknown during a preview are passed through unchecked. Values
 * Pulumi reserves are refused (reserved-values.ts): an asset, archive or other
 * signature-keyed object in mapping or properties, `__proto__` keys. A string
 * equal to the unknown marker is what a computed input looks like here (in a
 * preview), so it passes as unknown; data never carries one that far: specs are
 * refused with it before any run (groups-spec.ts), and a program's values when
 * the UserGroup is declared or, for an output, once it is known
 * (resource/user-group.ts). create, update and diff refuse it where the engine
 * never sends one (lifecycle.ts).
 */
export function checkInputs(raw: Record<string, unknown>): CheckResult {
  const picked = pickInputs(raw);
  const reserved = reservedValueProblems(picked, { unknownValues: "pass" });
  if (reserved.length > 0) return { ok: false, failures: reserved.map((problem) => ({ property: problem.path, reason: problem.message })) };
  const known: Record<string, unknown> = {};
  const unknown: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(picked)) (containsUnknown(value) ? unknown : known)[key] = value;

  const schema = schemaFor(unknown.name !== undefined, unknown.userGroupId !== undefined);
  const parsed = schema.safeParse(known, WORDED_ISSUES);
  if (!parsed.success) {
    return {
      ok: false,
      failures: parsed.error.issues.map((issue) => ({ property: issuePath(issue) || "(inputs)", reason: formatIssue(issue, "inputs") })),
    };
  }
  const normalized = normalizeInputs({ ...(parsed.data as UserGroupInputs) });
  return { ok: true, inputs: { ...normalized, ...unknown } as CheckedInputs };
}
