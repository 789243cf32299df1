// What a reviewer must see of a change, for the table and the Markdown summary:
// old -> new of each changed input (mapping and properties key by key), a token
// rotation and a deletion flagged for what they do (the old token stops working
// at once). Inputs only, so never a token. Every value is bounded and printed as
// JSON with control, format and bidi characters escaped: a value is data, never
// something a terminal or a Markdown renderer acts on.
import { CONTROLS, type FieldChange, type GroupResult, type GroupSpec, resourceNameOf, type RunResult } from "../../automation/offline";

/** Longest value shown; longer ones end in "...". */
const MAX_VALUE_CHARS = 60;
/** Keys of a mapping or properties shown per group; the rest counted. */
const MAX_KEYS = 10;

export const ARROW = "→";
export const TOKEN_STOPS = "the old token stops working at once";
const DELETED_TOKEN = "the group and its token are gone at once";
const REPLACED = `replaced: a new group and token; ${TOKEN_STOPS}`;

/** Control, format and bidi characters (the set resource names encode). */
const UNSAFE = new RegExp(`[${CONTROLS}]`, "gu");

function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, max - 3).join("")}...` : text;
}

/** A value as a reader sees it: JSON, escaped, bounded; "(none)" when not set. */
export function shownValue(value: unknown): string {
  if (value === undefined) return "(none)";
  return cut(escapeUnsafe(JSON.stringify(value) ?? String(value)), MAX_VALUE_CHARS);
}

function keyPath(field: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]{0,40}$/.test(key) ? `${field}.${key}` : `${field}[${cut(escapeUnsafe(JSON.stringify(key)), 42)}]`;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return {};
  return typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `mapping.sales: "eu" → "us"`, one per changed key (objects compared key by key). */
function objectLines(change: FieldChange): string[] {
  const olds = asObject(change.old);
  const news = asObject(change.new);
  if (olds === undefined || news === undefined) return [`${change.field}: ${shownValue(change.old)} ${ARROW} ${shownValue(change.new)}`];
  const keys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].sort().filter((key) => !sameJson(olds[key], news[key]));
  const lines = keys.slice(0, MAX_KEYS).map((key) => `${keyPath(change.field, key)}: ${shownValue(olds[key])} ${ARROW} ${shownValue(news[key])}`);
  if (keys.length > MAX_KEYS) lines.push(`... and ${keys.length - MAX_KEYS} more keys of ${change.field}`);
  // null -> {} and the like: no key differs, yet the value did.
  if (lines.length === 0) lines.push(`${change.field}: ${shownValue(change.old)} ${ARROW} ${shownValue(change.new)}`);
  return lines;
}

/** A new group's input as a reader sees it: `name: "Acme"`, `mapping.sales: "eu"` (key by key), nothing for an empty object. */
function valueLines(change: FieldChange): string[] {
  const value = change.new;
  if (value === undefined) return [];
  const object = change.field === "mapping" || change.field === "properties" ? asObject(value) : undefined;
  if (object === undefined) {
    if (change.field === "adoptExisting") return value === true ? ["adoptExisting: true (an existing group with this id is taken over, its token kept)"] : [];
    return [`${change.field}: ${shownValue(value)}`];
  }
  const keys = Object.keys(object).sort();
  const lines = keys.slice(0, MAX_KEYS).map((key) => `${keyPath(change.field, key)}: ${shownValue(object[key])}`);
  if (keys.length > MAX_KEYS) lines.push(`... and ${keys.length - MAX_KEYS} more keys of ${change.field}`);
  return lines;
}

/** The declared inputs of a new group, in a reader's order: name, id, profile, mapping, properties, rotationTrigger, adoptExisting. */
const CREATE_FIELDS = ["name", "userGroupId", "profile", "mapping", "properties", "rotationTrigger", "adoptExisting"] as const;

/**
 * The result with each created group's declared inputs as its fieldChanges
 * (`new` only), taken from the groups file: what a reviewer approves when a
 * group is added. Inputs only, never a token.
 */
export function withCreateDetails(result: RunResult, specs: readonly GroupSpec[] | undefined): RunResult {
  if (specs === undefined || !result.groups.some((g) => g.change === "create" && g.fieldChanges === undefined)) return result;
  const byName = new Map(specs.map((spec) => [resourceNameOf(spec), spec]));
  const groups = result.groups.map((group) => {
    const spec = group.change === "create" && group.fieldChanges === undefined ? byName.get(group.resourceName) : undefined;
    if (spec === undefined) return group;
    const fieldChanges = CREATE_FIELDS.filter((field) => spec[field] !== undefined).map((field) => ({ field, new: spec[field] as unknown }));
    return { ...group, fieldChanges };
  });
  return { ...result, groups };
}

function fieldLines(change: FieldChange): string[] {
  switch (change.field) {
    case "mapping":
    case "properties":
      return objectLines(change);
    case "rotationTrigger":
      return [`token rotation (rotationTrigger ${shownValue(change.old)} ${ARROW} ${shownValue(change.new)}): ${TOKEN_STOPS}`];
    case "userGroupId":
    case "profile":
      return [`replaced (${change.field} ${shownValue(change.old)} ${ARROW} ${shownValue(change.new)}): a new group and token; ${TOKEN_STOPS}`];
    default:
      return [`${change.field}: ${shownValue(change.old)} ${ARROW} ${shownValue(change.new)}`];
  }
}

/** A drift's differences, old -> new, mapping and properties key by key. */
export function fieldChangeLines(changes: readonly FieldChange[]): string[] {
  return changes.flatMap(fieldLines);
}

/**
 * What changes of a group, one line per point; empty for an unchanged one.
 * A group result without values (older callers) falls back to field names.
 */
export function changeLines(group: GroupResult): string[] {
  switch (group.change) {
    case "create": {
      const declared = group.fieldChanges?.flatMap(valueLines) ?? [];
      if (declared.length > 0) return ["new group", ...declared];
      // Without the groups file (a library caller): what the result itself says (its id is in its name).
      return ["new group", ...(group.name !== undefined ? [`name: ${shownValue(group.name)}`] : [])];
    }
    case "delete": {
      const name = group.fieldChanges?.find((c) => c.field === "name")?.old;
      return [`deleted (no longer declared${name !== undefined ? `; was ${shownValue(name)}` : ""}): ${DELETED_TOKEN}`];
    }
    case "failed":
      return ["failed"];
    case "update":
    case "replace": {
      const lines = (() => {
        if (group.fieldChanges !== undefined && group.fieldChanges.length > 0) return group.fieldChanges.flatMap(fieldLines);
        const fields = group.changedFields ?? [];
        if (fields.length === 0) return [group.change];
        const word = (field: string) =>
          field === "rotationTrigger" ? `token rotation (${TOKEN_STOPS})` : field === "userGroupId" || field === "profile" ? `replaced (${field} changed): a new group and token; ${TOKEN_STOPS}` : field;
        return [fields.map(word).join(", ")];
      })();
      // A replacement always says what it does to the token, whatever its reason.
      if (group.change === "replace" && !lines.some((line) => line.includes(TOKEN_STOPS))) lines.push(REPLACED);
      return lines;
    }
    default:
      return [];
  }
}
