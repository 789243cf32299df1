// One wording for every validation failure (check, groups files, responses the
// client reads, requests and options the fake server reads): built from each
// zod issue's data (code, expected, minimum, keys...), never from zod's English.
// A message a schema sets itself (a refine's `message`) is already in this
// wording and wins over the map, as zod's precedence gives it.
import type { z } from "zod";

/** What a value is, in the words a message uses ("received number"). */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** zod's `expected` names, as a person says them. */
function expectedNoun(expected: string): string {
  switch (expected) {
    case "record":
    case "object":
      return "an object";
    case "int":
      return "a whole number";
    case "null":
    case "undefined":
      return expected;
    default:
      return article(expected);
  }
}

function quote(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function sizeNoun(origin: string, limit: number | bigint): string {
  const plural = limit === 1 || limit === 1n ? "" : "s";
  if (origin === "string") return ` character${plural}`;
  if (origin === "array" || origin === "set") return ` item${plural}`;
  if (origin === "file") return ` byte${plural}`;
  return "";
}

function bound(issue: { origin: string; inclusive?: boolean; exact?: boolean }, limit: number | bigint, side: "least" | "most"): string {
  const unit = sizeNoun(issue.origin, limit);
  if (issue.exact) return `must be exactly ${limit}${unit}`;
  if (issue.inclusive === false) return `must be ${side === "least" ? "more" : "less"} than ${limit}${unit}`;
  return `must be at ${side} ${limit}${unit}`;
}

/**
 * The zod error map: the reason a value failed, without its path ("is required",
 * "must be a string, received number"). Never echoes the value itself: it may be
 * a secret.
 */
export function issueMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined
        ? "is required"
        : `must be ${expectedNoun(issue.expected)}, received ${kindOf(issue.input)}`;
    case "too_small":
      return bound(issue, issue.minimum, "least");
    case "too_big":
      return bound(issue, issue.maximum, "most");
    case "invalid_format":
      return issue.format === "regex" ? `must match ${issue.pattern ?? "the pattern"}` : `must be ${article(issue.format)}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return `has ${issue.keys.length === 1 ? "an unknown key" : "unknown keys"} ${issue.keys.map(quote).join(", ")}`;
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${quote(issue.values[0])}` : `must be one of ${issue.values.map(quote).join(", ")}`;
    case "invalid_union":
      return "matches none of the allowed shapes";
    case "invalid_key":
      return "has an invalid key";
    case "invalid_element":
      return "has an invalid element";
    default:
      return "is invalid";
  }
}

/** Why a "__proto__" key is refused (checked before a schema walks the value). */
export const PROTO_KEY_REFUSED = 'is not allowed (a "__proto__" key would set the prototype, not a key)';

/** Code units of outside text a message quotes at most. */
const MAX_QUOTED_UNITS = 80;

/**
 * Outside text (a key, an id) as a message may quote it: in double quotes, cut
 * at 80 code units, every character outside printable ASCII written as \uXXXX,
 * so that no control, bidi or escape sequence reaches a terminal or a log.
 */
export function quoteForMessage(text: string): string {
  const cut = text.length > MAX_QUOTED_UNITS ? text.slice(0, MAX_QUOTED_UNITS) : text;
  const escaped = cut.replace(/[^\x20-\x7e]|["\\]/g, (char) =>
    char === '"' || char === "\\" ? `\\${char}` : `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return `"${escaped}"${cut.length < text.length ? "..." : ""}`;
}

/** Parse options that word every issue with {@link issueMessage}. */
export const WORDED_ISSUES = { error: issueMessage } as const satisfies z.core.ParseContext<z.core.$ZodIssue>;

/** `mapping.sales`, `rules.0.status`; empty for the value itself. */
export function issuePath(issue: Pick<z.core.$ZodIssue, "path">): string {
  return issue.path.map(String).join(".");
}

/**
 * One issue as a sentence: "name must not be blank", "mapping.sales must be a
 * string, received number". `subject` names the value itself when the issue has
 * no path ("inputs", "request body").
 */
export function formatIssue(issue: z.core.$ZodIssue, subject: string): string {
  const path = issuePath(issue);
  return `${path === "" ? subject : path} ${issue.message}`;
}

/** Every issue of a failed parse, each as {@link formatIssue} words it. */
export function formatIssues(error: z.ZodError, subject: string): string[] {
  return error.issues.map((issue) => formatIssue(issue, subject));
}
