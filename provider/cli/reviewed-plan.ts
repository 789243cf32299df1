// Apply what was reviewed (issue #33 item 4). A preview on a pull request
// records exactly the changes it showed, as a plan file (`--plan-file`) and a
// digest (in the summary and the JSON); `up --plan-file` previews again and
// refuses to apply anything else, naming each difference, then checks that what
// it applied is what was reviewed. Main may have moved between the two, or the
// service changed behind the state's back: either way nobody reviewed the
// difference. Pulumi's own update plans (`preview --save-plan`, `up --plan`) are
// experimental and not relied on here.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { GroupSpec, RunResult } from "../automation/internal";
import { UserGroupsError } from "../wire/errors";
import { runSummaryMarkdown, terminalText } from "./output";

/** One group's change as a reviewer saw it: never a token. */
export interface PlannedChange {
  readonly resourceName: string;
  readonly change: string;
  /** What the groups file declares for a create, update or replace. */
  readonly declared?: Record<string, unknown>;
  /** For an update or replace: each changed input, old and new. */
  readonly fields?: ReadonlyArray<{ readonly field: string; readonly old?: unknown; readonly new?: unknown }>;
}

/**
 * What a plan is the preview of (issue #39 item 6): the commit (a pull request's head) and
 * the CI run that made it. `up` checks them against the commit it applies and the run it
 * took the plan from, so that a plan of an earlier push, or one carried from elsewhere, is
 * never applied.
 */
export interface PlanOrigin {
  /** A git commit: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits. */
  readonly commit: string;
  /** The CI run's id, digits (GitHub's `GITHUB_RUN_ID`). */
  readonly run: string;
}

export interface ReviewedPlan {
  readonly schemaVersion: 1;
  readonly stack: string;
  readonly digest: string;
  /** Absent when the preview was given no --plan-commit/--plan-run. */
  readonly origin?: PlanOrigin;
  readonly changes: readonly PlannedChange[];
}

export const PLAN_COMMIT_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export const PLAN_RUN_PATTERN = /^[1-9][0-9]{0,19}$/;

/** A plan file is outside input (a CI artifact): bounded and checked before it decides anything. */
export const MAX_PLAN_BYTES = 16 * 1024 * 1024;

const plannedChangeSchema = z.strictObject({
  resourceName: z.string().min(1).max(2048),
  change: z.enum(["create", "update", "replace", "delete", "failed", "refresh", "read"]),
  declared: z.record(z.string(), z.json()).optional(),
  fields: z.array(z.strictObject({ field: z.string().max(100), old: z.json().optional(), new: z.json().optional() })).max(20).optional(),
});
const reviewedPlanSchema = z.strictObject({
  schemaVersion: z.literal(1),
  stack: z.string().min(1).max(400),
  digest: z.string().regex(/^sha256:[A-Za-z0-9_-]{43}$/),
  origin: z.strictObject({ commit: z.string().regex(PLAN_COMMIT_PATTERN), run: z.string().regex(PLAN_RUN_PATTERN) }).optional(),
  changes: z.array(plannedChangeSchema).max(100_000),
});

const DECLARED_KEYS = ["name", "userGroupId", "profile", "mapping", "properties", "rotationTrigger", "adoptExisting"] as const;

function declaredOf(spec: GroupSpec | undefined): Record<string, unknown> | undefined {
  if (spec === undefined) return undefined;
  const declared: Record<string, unknown> = {};
  for (const key of DECLARED_KEYS) if (spec[key] !== undefined && spec[key] !== null) declared[key] = spec[key];
  return declared;
}

/** The changes of a preview or up, in resource-name order, from its result and the groups it declared. */
export function plannedChangesOf(result: RunResult, specs: readonly GroupSpec[], resourceNameOf: (spec: GroupSpec) => string): PlannedChange[] {
  const byName = new Map(specs.map((spec) => [resourceNameOf(spec), spec]));
  return result.groups
    .filter((group) => group.change !== "same")
    .map((group) => {
      const declared = group.change === "delete" ? undefined : declaredOf(byName.get(group.resourceName));
      const fields = group.change === "update" || group.change === "replace" ? group.fieldChanges : undefined;
      return {
        resourceName: group.resourceName,
        change: group.change,
        ...(declared !== undefined ? { declared } : {}),
        ...(fields !== undefined && fields.length > 0 ? { fields: fields.map((f) => ({ field: f.field, ...(f.old !== undefined ? { old: f.old } : {}), ...(f.new !== undefined ? { new: f.new } : {}) })) } : {}),
      };
    })
    .sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
}

/** JSON with object keys sorted: one text for one change set, whatever the order things were built in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** `sha256:` and the hash in base64url: 43 characters that no one takes for a token (tokens are 64 hex digits). */
export function changesDigest(stack: string, changes: readonly PlannedChange[]): string {
  return `sha256:${createHash("sha256").update(canonical({ stack, changes })).digest("base64url")}`;
}

export function reviewedPlanOf(stack: string, changes: readonly PlannedChange[], origin?: PlanOrigin): ReviewedPlan {
  return { schemaVersion: 1, stack, digest: changesDigest(stack, changes), ...(origin !== undefined ? { origin } : {}), changes };
}

/** The plan file's text, as `preview --plan-file` writes it. */
export function planFileText(plan: ReviewedPlan): string {
  return `${JSON.stringify(plan, null, 2)}\n`;
}

/** The Markdown summary of a preview or up, with the digest of its change set when anything changes. */
export function reviewSummaryMarkdown(result: RunResult, plan: ReviewedPlan): string {
  return `${runSummaryMarkdown(result)}${result.changed ? `\nChange set \`${plan.digest}\`\n` : ""}`;
}

/**
 * Why a plan is not the preview of the commit being applied, made by the run it was taken
 * from; undefined when it is (or nothing is expected). Says what to do: preview that commit
 * again and apply its plan.
 */
export function planOriginMismatch(plan: ReviewedPlan, expected: PlanOrigin | undefined): string | undefined {
  if (expected === undefined) return undefined;
  const again = `Nothing was changed. Preview commit ${expected.commit} (re-run the preview of its pull request), have it reviewed, and apply that plan.`;
  const origin = plan.origin;
  if (origin === undefined) {
    return `The plan file names no commit or run (its preview was given no --plan-commit and --plan-run), so it cannot be shown to be the preview of commit ${expected.commit}. ${again}`;
  }
  if (origin.commit !== expected.commit) {
    return `The plan file is the preview of commit ${origin.commit} (run ${origin.run}), but commit ${expected.commit} is being applied: its last push was not previewed (the preview was cancelled, failed, or was still running at the merge). ${again}`;
  }
  if (origin.run !== expected.run) {
    return `The plan file was made by run ${origin.run}, not by run ${expected.run} it was taken from: it is not that run's preview of commit ${expected.commit}. ${again}`;
  }
  return undefined;
}

/** A plan file's text, checked: its shape, and its digest against its own changes (a hand-edited file is refused). */
export function parseReviewedPlan(text: string): ReviewedPlan | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return "it is not JSON";
  }
  const parsed = reviewedPlanSchema.safeParse(raw);
  if (!parsed.success) return "it is not a plan file this command wrote";
  const plan = parsed.data as ReviewedPlan;
  if (changesDigest(plan.stack, plan.changes) !== plan.digest) return "its digest does not match its changes (edited after the preview?)";
  return plan;
}

function describe(change: PlannedChange | undefined): string {
  if (change === undefined) return "no change";
  const fields = change.fields?.map((f) => f.field) ?? [];
  return fields.length > 0 ? `${change.change} of ${fields.join(", ")}` : change.change;
}

/** Each difference between the reviewed changes and the ones found now, one line each (outside text made safe for a terminal). */
export function planDifferences(reviewed: readonly PlannedChange[], now: readonly PlannedChange[]): string[] {
  const before = new Map(reviewed.map((c) => [c.resourceName, c]));
  const after = new Map(now.map((c) => [c.resourceName, c]));
  const names = [...new Set([...before.keys(), ...after.keys()])].sort();
  const lines: string[] = [];
  for (const name of names) {
    const was = before.get(name);
    const is = after.get(name);
    if (was !== undefined && is !== undefined && canonical(was) === canonical(is)) continue;
    const how = was !== undefined && is !== undefined && was.change === is.change ? `${describe(is)}, with other values than reviewed` : `reviewed: ${describe(was)}; now: ${describe(is)}`;
    lines.push(`${terminalText(name)}: ${how}`);
  }
  return lines;
}

/**
 * The reviewed plan of `up --plan-file`, from its file's text: this command's
 * format, this stack's, of the commit and run given (`expected`), or a
 * PlanMismatchError that says why not. `file`: the plan file's name, for messages.
 */
export function checkedReviewedPlan(text: string, file: string, stack: string, expected: PlanOrigin | undefined): ReviewedPlan {
  const plan = parseReviewedPlan(text);
  const where = JSON.stringify(file.slice(0, 300));
  if (typeof plan === "string") throw new PlanMismatchError("plan_file_invalid", `The plan file ${where} cannot be used: ${plan}. Nothing was changed.`);
  if (plan.stack !== stack) throw new PlanMismatchError("plan_file_invalid", `The plan file ${where} is stack ${JSON.stringify(plan.stack)}'s, not "${stack}"'s. Nothing was changed.`);
  const mismatch = planOriginMismatch(plan, expected);
  if (mismatch !== undefined) throw new PlanMismatchError("plan_origin_mismatch", mismatch);
  return plan;
}

/** Before the up: a preview now must find exactly the reviewed changes (PlanMismatchError, nothing changed, when it does not). */
export function assertPreviewAsReviewed(reviewed: ReviewedPlan, preview: RunResult, specs: readonly GroupSpec[], resourceNameOf: (spec: GroupSpec) => string): void {
  assertAsReviewed(reviewed, plannedChangesOf(preview, specs, resourceNameOf), false);
}

/** After the up: what it applied must be what was reviewed (a change that slipped in between the check and the up is named: PlanMismatchError, applied). */
export function assertAppliedAsReviewed(reviewed: ReviewedPlan, applied: ReviewedPlan): void {
  assertAsReviewed(reviewed, applied.changes, true);
}

function assertAsReviewed(reviewed: ReviewedPlan, now: readonly PlannedChange[], applied: boolean): void {
  const differences = planDifferences(reviewed.changes, now);
  if (differences.length === 0) return;
  const shown = differences.slice(0, 50);
  const what = applied ? "the up applied other changes than the reviewed ones" : "a preview now finds other changes than the reviewed one";
  throw new PlanMismatchError(
    "plan_mismatch",
    `${what} (reviewed ${reviewed.digest}):\n  ${shown.join("\n  ")}${differences.length > shown.length ? `\n  and ${differences.length - shown.length} more` : ""}\n` +
      (applied ? "Review the stack now (user-groups drift)." : "Nothing was changed. Preview again and have the new changes reviewed."),
    differences,
    applied,
  );
}

/** `up --plan-file` refused: the plan file is not one, is another commit's or run's, or the changes are not the reviewed ones. */
export class PlanMismatchError extends UserGroupsError {
  constructor(
    code: "plan_mismatch" | "plan_file_invalid" | "plan_origin_mismatch",
    message: string,
    readonly differences: readonly string[] = [],
    /** The up had already applied its changes when the difference was found (a failure, not a refusal). */
    readonly applied = false,
  ) {
    super(code, message);
    this.name = "PlanMismatchError";
  }
}
