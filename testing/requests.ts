// Verification: queries over the requests a run sent (the emulator's journal,
// already redacted by the server) and assertions that fail with a readable
// difference between what was expected and what was sent. Every message is
// scrubbed again before it is thrown: no token (any run of 64 hex digits) and no
// key the caller names ever appears in one.
import { isDeepStrictEqual } from "node:util";
import type { JournalEntry } from "../fake-server/index.js";
import { UserGroupsError } from "../provider/wire/errors.js";

/** What a request must be to match; every field given must hold. */
export interface RequestQuery {
  /** GET, PUT, POST or DELETE. */
  readonly method?: string;
  /** The path (`/api/user`). */
  readonly path?: string;
  /** The group it was about: the body's user_group_id, or the group holding current_token. */
  readonly userGroupId?: string;
  /** The status answered; null for no answer (a reset or lost-answer fault). */
  readonly status?: number | null;
  /** The W3C trace id of the request's traceparent. */
  readonly traceId?: string;
  /** The error code of a failure. */
  readonly code?: string;
  /**
   * Fields the body must hold, each equal (deeply) to the value given; other fields may be there too.
   * Tokens are redacted in the journal: `current_token` can only be expected as "[REDACTED]".
   */
  readonly body?: Readonly<Record<string, unknown>>;
}

/** How many matching requests are expected: exactly `times`, or at least `atLeast` (default at least 1). */
export interface RequestCount {
  readonly times?: number;
  readonly atLeast?: number;
}

/** A failed request assertion: the message shows what was expected and what was sent, redacted. */
export class RequestsNotAsExpectedError extends UserGroupsError {
  constructor(message: string) {
    super("requests_not_as_expected", message);
    this.name = "RequestsNotAsExpectedError";
  }
}

const QUERY_FIELDS = ["method", "path", "userGroupId", "status", "traceId", "code"] as const;

/** One difference of an entry from the query: which field, what was expected, what was sent. */
interface Difference {
  readonly field: string;
  readonly expected: unknown;
  readonly sent: unknown;
}

function differences(entry: JournalEntry, query: RequestQuery): Difference[] {
  const out: Difference[] = [];
  for (const field of QUERY_FIELDS) {
    const expected = query[field];
    if (expected === undefined) continue;
    const sent = field === "method" ? entry.method.toUpperCase() : entry[field];
    const want = field === "method" && typeof expected === "string" ? expected.toUpperCase() : expected;
    if (sent !== want) out.push({ field, expected: want, sent });
  }
  if (query.body !== undefined) {
    const body = entry.body !== null && typeof entry.body === "object" && !Array.isArray(entry.body) ? entry.body : undefined;
    for (const [field, expected] of Object.entries(query.body)) {
      const sent = body === undefined || !Object.hasOwn(body, field) ? undefined : body[field];
      if (!isDeepStrictEqual(sent, expected)) out.push({ field: `body.${field}`, expected, sent });
    }
  }
  return out;
}

/** The requests that match `query`, oldest first. */
export function findRequests(entries: readonly JournalEntry[], query: RequestQuery = {}): JournalEntry[] {
  return entries.filter((entry) => differences(entry, query).length === 0);
}

/**
 * Asserts that `count` requests match `query` (default: at least one). On failure it throws a
 * RequestsNotAsExpectedError listing every request sent, and for the closest one each field
 * that differs (`- expected`, `+ sent`). `secrets` (API keys, tokens you hold) are redacted from
 * the message, as is anything shaped like a token.
 */
export function expectRequests(
  entries: readonly JournalEntry[],
  query: RequestQuery,
  count: RequestCount = {},
  secrets: readonly string[] = [],
): JournalEntry[] {
  const matched = findRequests(entries, query);
  const ok = count.times !== undefined ? matched.length === count.times : matched.length >= (count.atLeast ?? 1);
  if (ok) return matched;
  const wanted = count.times !== undefined ? `exactly ${count.times}` : `at least ${count.atLeast ?? 1}`;
  const lines = [`expected ${wanted} request(s) matching ${show(query)}, found ${matched.length}.`];
  if (entries.length === 0) {
    lines.push("No request was sent.");
  } else {
    const scored = entries.map((entry, index) => ({ entry, index, diff: differences(entry, query) }));
    const closest = scored.filter((s) => s.diff.length > 0).sort((a, b) => a.diff.length - b.diff.length)[0];
    lines.push(`Sent (${entries.length}):`);
    for (const { entry, index, diff } of scored.slice(-50)) {
      const mark = diff.length === 0 ? "  (matches)" : closest !== undefined && index === closest.index ? "  (closest)" : "";
      lines.push(`  ${index + 1}. ${summary(entry)}${mark}`);
    }
    if (closest !== undefined && matched.length < (count.times ?? count.atLeast ?? 1)) {
      lines.push(`Closest, request ${closest.index + 1} (- expected, + sent):`);
      for (const d of closest.diff) lines.push(`  ${d.field}:`, `    - ${show(d.expected)}`, `    + ${show(d.sent)}`);
    }
  }
  throw new RequestsNotAsExpectedError(scrub(lines.join("\n"), secrets));
}

/** `PUT /api/user -> 200 acme {"user_group_id":"acme","name":"Acme"}` */
function summary(entry: JournalEntry): string {
  const status = entry.status === null ? "no answer" : String(entry.status);
  const code = entry.code === undefined ? "" : ` ${entry.code}`;
  const id = entry.userGroupId === undefined ? "" : ` [${entry.userGroupId}]`;
  const body = entry.body === null ? "" : ` ${show(entry.body)}`;
  return `${entry.method} ${entry.path} -> ${status}${code}${id}${body}`;
}

/** A value as one line of JSON, cut at 300 characters. */
function show(value: unknown): string {
  const text = value === undefined ? "(absent)" : JSON.stringify(value) ?? String(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Removes every secret named, and every run of 64 hex digits (the shape of a token). */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text.replace(/[0-9a-fA-F]{64}/g, "[REDACTED]");
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[REDACTED]");
  return out;
}
