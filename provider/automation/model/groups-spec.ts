// The list of groups a caller (or a groups file) declares, validated before
// Pulumi runs: each entry with the resource's own rules, plus no userGroupId
// twice under one profile (profiles stand for environments; two profiles may
// still share one environment, which only the service can tell). A spec is
// plain data, so any value Pulumi reserves is refused, the unknown marker
// included (reserved-values.ts).
import { z } from "zod";
import { type UserGroupInputs, userGroupInputsSchema } from "../../logic/inputs";
import { reservedValueProblems } from "../../logic/reserved-values";
import { didYouMean } from "../../wire/did-you-mean";
import { formatIssue, quoteForMessage, WORDED_ISSUES } from "../../wire/issues";
import { MAX_BODY_BYTES } from "../../wire/schemas";
import { UserGroupsError } from "../../wire/errors";
import { NO_PROFILE, resourceNameOf } from "./resource-name";

export { resourceNameOf } from "./resource-name";

/** A group's properties travel in one request body, which the service caps (W2). */
export const MAX_PROPERTIES_BYTES = MAX_BODY_BYTES;

/** @internal The public form is automation/index.ts's groupSpecSchema (its type never mentions zod). */
export const groupSpecSchema = userGroupInputsSchema.strict();
/** One group of a groups file, of `provisionUserGroups` or of a fleet call: a UserGroup's inputs. */
export type GroupSpec = UserGroupInputs;

/** A spec as a UserGroup's args: `properties: null` (clear them) is declared as no properties. */
export function userGroupArgsOf(spec: GroupSpec): Omit<GroupSpec, "properties"> & { properties?: NonNullable<GroupSpec["properties"]> } {
  const { properties, ...rest } = spec;
  return properties === null || properties === undefined ? rest : { ...rest, properties };
}

/** The keys a group accepts, for "did you mean" after a typo. */
const GROUP_KEYS: readonly string[] = Object.keys(groupSpecSchema.shape);

/** ` (did you mean name?)` for keys close to one a group accepts; empty when none is. */
export function keySuggestion(keys: readonly string[], candidates: readonly string[] = GROUP_KEYS): string {
  const hints = keys.flatMap((key) => {
    const close = didYouMean(key, candidates);
    return close === undefined ? [] : [keys.length === 1 ? close : `${close} for ${quoteForMessage(key)}`];
  });
  return hints.length === 0 ? "" : ` (did you mean ${hints.join(", ")}?)`;
}

/** @internal */
export const groupsDocumentSchema = z.strictObject({ groups: z.array(z.unknown()) });

export interface SpecProblem {
  /** 0-based position in the list. */
  readonly entry: number;
  readonly userGroupId?: string;
  readonly problem: string;
}

export class GroupsValidationError extends UserGroupsError {
  constructor(
    readonly problems: readonly SpecProblem[],
    readonly source?: string,
  ) {
    super(
      "invalid_groups",
      `${source ? `${source}: ` : ""}${problems.length === 1 ? "1 problem" : `${problems.length} problems`} in the groups, nothing was changed:\n` +
        problems.map((p) => `  - groups[${p.entry}]${p.userGroupId !== undefined ? ` (userGroupId ${quoteForMessage(p.userGroupId)})` : ""}: ${p.problem}`).join("\n"),
    );
    this.name = "GroupsValidationError";
  }
}


/** Validates every entry; throws GroupsValidationError listing every problem at once. */
export function validateGroups(entries: readonly unknown[], source?: string): GroupSpec[] {
  const problems: SpecProblem[] = [];
  const specs: GroupSpec[] = [];
  const seen = new Map<string, number>();
  entries.forEach((entry, index) => {
    const idOf = (entry as { userGroupId?: unknown } | null)?.userGroupId;
    const userGroupId = typeof idOf === "string" ? idOf : undefined;
    // Before the schema walks them: a group's properties larger than a request body can never be sent.
    const propertiesBytes = serializedBytes((entry as { properties?: unknown } | null)?.properties);
    if (propertiesBytes > MAX_PROPERTIES_BYTES) {
      problems.push({ entry: index, userGroupId, problem: `properties: ${propertiesBytes} bytes serialized, over the limit of ${MAX_PROPERTIES_BYTES} (1 MiB)` });
      return;
    }
    // Before the schema too: it would drop a "__proto__" key silently, and a value nested thousands deep overflows its recursion.
    if (entry !== null && typeof entry === "object" && !Array.isArray(entry)) {
      const reserved = reservedValueProblems(entry as Record<string, unknown>, { unknownValues: "refuse" });
      if (reserved.length > 0) {
        for (const { message } of reserved) problems.push({ entry: index, userGroupId, problem: message });
        return;
      }
    }
    const parsed = groupSpecSchema.safeParse(entry, WORDED_ISSUES);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        // A misspelt key of the group itself: the key it is closest to.
        const hint = issue.code === "unrecognized_keys" && issue.path.length === 0 ? keySuggestion(issue.keys) : "";
        problems.push({ entry: index, userGroupId, problem: `${formatIssue(issue, "the group")}${hint}` });
      }
      return;
    }
    if (parsed.data.profile === NO_PROFILE) {
      // Its resource names would be those of the groups declared without a profile.
      problems.push({ entry: index, userGroupId, problem: `profile "${NO_PROFILE}" is reserved for groups declared without a profile: leave profile out, or name another` });
      return;
    }
    const key = resourceNameOf(parsed.data);
    const first = seen.get(key);
    if (first !== undefined) {
      problems.push({
        entry: index,
        userGroupId,
        problem: `duplicate userGroupId under profile "${parsed.data.profile ?? "default"}" (also groups[${first}])`,
      });
      return;
    }
    seen.set(key, index);
    specs.push(parsed.data);
  });
  if (problems.length > 0) throw new GroupsValidationError(problems, source);
  return specs;
}

/** Bytes of a value as JSON (0 for none); a value JSON cannot hold counts as 0 and is left to the schema. */
function serializedBytes(value: unknown): number {
  if (value === undefined || value === null) return 0;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? 0 : Buffer.byteLength(text);
  } catch {
    return 0;
  }
}
