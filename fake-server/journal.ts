// The request journal behind `GET /__admin/requests`, bounded by entries and by
// bytes. Each entry keeps a redacted JSON text of the request body, capped at
// MAX_BODY_TEXT_CHARS, never the parsed body itself nor a slice of the request's
// text, either of which keeps whole 1 MiB bodies alive (docs/performance.md,
// fix 9). Redacted when recorded: every value of a field named `token` or
// `current_token` (at any depth), every configured API key and any key the
// request presented (whatever their length), and anything shaped like an issued
// token (64 hex digits, see ISSUED_TOKEN_PATTERN) wherever it appears.
import type { JsonValue } from "../provider/wire/schemas.js";

export const REDACTED = "[REDACTED]";
const SECRET_FIELDS = new Set(["token", "current_token"]);
/** The secret fields as they appear as keys in JSON text (the fast path's test). */
const SECRET_FIELD_KEYS = [...SECRET_FIELDS].map((field) => JSON.stringify(field));
/** Issued tokens match ISSUED_TOKEN_PATTERN; any run of 64 hex digits is treated as one. */
const TOKEN_LIKE = /[0-9a-fA-F]{64}/g;

/** The most of a body's redacted JSON text one entry keeps. */
export const MAX_BODY_TEXT_CHARS = 16 * 1024;
/** Approximate bytes an entry costs beyond its strings (object, numbers, small fields). */
const ENTRY_OVERHEAD_BYTES = 160;
/** What a recorded traceparent and its trace id add (55 + 32 characters). */
const TRACE_BYTES = 87;

export interface JournalEntry {
  time: string;
  method: string;
  path: string;
  /** The status answered; null when no answer was sent (a `reset` or `drop-after-apply` fault). */
  status: number | null;
  /** Error code of a failure, for quick reading. */
  code?: string;
  environment?: string;
  /** The redacted request body when it parsed as a JSON object and its text fits MAX_BODY_TEXT_CHARS, else null. */
  body: JsonValue | null;
  /** For a body too large to keep: the first MAX_BODY_TEXT_CHARS characters of its redacted JSON text. */
  bodyPreview?: string;
  /** The fault rule action that fired, if any. */
  fault?: string;
  durationMs: number;
  /**
   * The request's W3C `traceparent` header when it has exactly the W3C form
   * (`00-<32 hex>-<16 hex>-<2 hex>`, lowercase, ids not all zero); absent otherwise
   * (no header, or anything else: never kept raw). See parseTraceparent.
   */
  traceparent?: string;
  /** The trace id of `traceparent` (its 32 hex digits): the id a tracing backend shows. */
  traceId?: string;
  /**
   * The group the request was about, when the server could tell: the body's
   * user_group_id (GET, PUT), or the id of the group holding current_token (POST,
   * DELETE; a token nobody holds leaves it out). Redacted like the path.
   */
  userGroupId?: string;
}

/**
 * An entry as the server fills it in; `presentedKey` is any key sent, valid or
 * not (used to redact, never kept). The time is a number, formatted when read.
 */
export interface RawJournalEntry extends Omit<JournalEntry, "time" | "body" | "bodyPreview"> {
  /** When the request arrived, in milliseconds since the epoch. */
  startedAt: number;
  presentedKey?: string;
  /** The namespace of the key (namespaces.ts): its journal gets the entry, not the server's. */
  namespace?: string;
  /** The parsed body (dropped when the entry is recorded). */
  body: JsonValue | null;
}

/** What the journal holds per request: only strings and small fields. */
interface RecordedEntry extends Omit<JournalEntry, "time" | "body" | "bodyPreview"> {
  startedAt: number;
  bodyText: string | null;
  bodyTruncated: boolean;
  bytes: number;
}

/** The exact W3C Trace Context `traceparent` of version 00 (https://www.w3.org/TR/trace-context/#traceparent-header). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_PARENT_ID = "0".repeat(16);

/**
 * A request's `traceparent` header, validated: the header and its trace id when it
 * is exactly `00-<32 hex>-<16 hex>-<2 hex>` (lowercase, neither id all zeros, one
 * header only), else undefined. Whatever else a client sends is never recorded.
 */
export function parseTraceparent(header: string | string[] | undefined): { traceparent: string; traceId: string } | undefined {
  if (typeof header !== "string" || header.length !== 55) return undefined;
  const match = TRACEPARENT.exec(header);
  if (match === null || match[1] === ZERO_TRACE_ID || match[2] === ZERO_PARENT_ID) return undefined;
  return { traceparent: header, traceId: match[1]! };
}

export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

export class Journal {
  private entries: RecordedEntry[] = [];
  /** Index of the oldest entry still held (evicted ones are compacted away in batches). */
  private head = 0;
  private heldBytes = 0;
  /** The configured keys as they appear inside JSON text. */
  private readonly escapedSecrets: readonly string[];

  /**
   * @param capacity most entries held
   * @param maxBytes most bytes (approximate, strings counted by length) held
   * @param secrets the configured API keys
   */
  constructor(
    private readonly capacity: number,
    private readonly maxBytes: number,
    private readonly secrets: readonly string[],
  ) {
    this.escapedSecrets = secrets.map(escapedInJson);
  }

  /** Approximate bytes held now. */
  get bytes(): number {
    return this.heldBytes;
  }

  add(raw: RawJournalEntry): void {
    if (this.capacity <= 0) return;
    const { presentedKey, body, namespace: _namespace, ...rest } = raw;
    const secrets = presentedKey === undefined ? this.secrets : [...this.secrets, presentedKey];
    const escaped = presentedKey === undefined ? this.escapedSecrets : [...this.escapedSecrets, escapedInJson(presentedKey)];
    const path = redactString(rest.path, secrets);
    if (rest.userGroupId !== undefined) rest.userGroupId = redactString(rest.userGroupId, secrets);
    const text = body === null ? undefined : (cleanJsonText(body, escaped) ?? redactedJsonText(body, secrets, MAX_BODY_TEXT_CHARS));
    const bodyText = text?.text ?? null;
    const bytes =
      ENTRY_OVERHEAD_BYTES + path.length + (bodyText?.length ?? 0) + (rest.traceparent === undefined ? 0 : TRACE_BYTES) + (rest.userGroupId?.length ?? 0);
    this.entries.push({ ...rest, path, bodyText, bodyTruncated: text?.truncated ?? false, bytes });
    this.heldBytes += bytes;
    while (this.entries.length - this.head > this.capacity || (this.heldBytes > this.maxBytes && this.entries.length - this.head > 1)) {
      this.heldBytes -= this.entries[this.head]!.bytes;
      this.head += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  /** Oldest first, redacted. */
  read(): JournalEntry[] {
    return this.entries.slice(this.head).map(({ startedAt, bodyText, bodyTruncated, bytes: _bytes, ...entry }) => {
      const out: JournalEntry = { time: isoTime(startedAt), ...entry, body: bodyText === null || bodyTruncated ? null : (JSON.parse(bodyText) as JsonValue) };
      if (bodyTruncated && bodyText !== null) out.bodyPreview = bodyText;
      return out;
    });
  }

  clear(): void {
    this.entries = [];
    this.head = 0;
    this.heldBytes = 0;
  }
}

/** Every occurrence of every secret (whatever its length) and of every token-shaped run becomes REDACTED. */
export function redactString(value: string, secrets: readonly string[]): string {
  let out = value.replace(TOKEN_LIKE, REDACTED);
  for (const secret of secrets) {
    if (secret.length > 0 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** Whether `text` holds a run of 64 hex digits (a plain scan: cheaper than a regex test on the small bodies of the hot path). */
function hasTokenShapedRun(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) | 0x20; // folds A-F onto a-f; digits keep their codes
    run = (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) ? run + 1 : 0;
    if (run >= 64) return true;
  }
  return false;
}

function escapedInJson(secret: string): string {
  return JSON.stringify(secret).slice(1, -1);
}

/**
 * The hot path: most bodies are small and hold nothing to redact. Their plain
 * JSON text is kept as it is, several times cheaper than the walk below
 * (docs/performance.md, fix 9).
 * Undefined when the body is too long, holds a secret field, a token-shaped run
 * or a key (`escapedSecrets`: the keys as JSON escapes them), or cannot be stringified.
 */
function cleanJsonText(value: JsonValue, escapedSecrets: readonly string[]): { text: string; truncated: false } | undefined {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  if (text.length > MAX_BODY_TEXT_CHARS || SECRET_FIELD_KEYS.some((key) => text.includes(key)) || hasTokenShapedRun(text)) return undefined;
  for (const secret of escapedSecrets) if (secret.length > 0 && text.includes(secret)) return undefined;
  return { text, truncated: false };
}

type Frame = { kind: "array"; items: readonly JsonValue[]; next: number } | { kind: "object"; entries: [string, JsonValue][]; next: number };

/**
 * The JSON text of `value` with secrets redacted, cut at `maxChars`. Built with
 * an explicit stack (no recursion, whatever the depth) and stopped as soon as the
 * cap is passed, so a 1 MiB body costs only the part that is kept.
 */
export function redactedJsonText(value: JsonValue, secrets: readonly string[], maxChars: number): { text: string; truncated: boolean } {
  const parts: string[] = [];
  let length = 0;
  const emit = (part: string): boolean => {
    parts.push(part);
    length += part.length;
    return length <= maxChars;
  };
  // A long string is redacted whole, then only the part that can still be kept is
  // serialized: a fresh small string, never a slice that pins the 1 MiB original.
  const quoted = (v: string): string => {
    const redacted = redactString(v, secrets);
    const room = Math.max(0, maxChars - length) + 16;
    return JSON.stringify(redacted.length > room ? redacted.slice(0, room) : redacted);
  };
  const scalar = (v: Exclude<JsonValue, object> | null): string => (typeof v === "string" ? quoted(v) : JSON.stringify(v));
  const open = (v: JsonValue): Frame | string => {
    if (Array.isArray(v)) return { kind: "array", items: v, next: 0 };
    if (v !== null && typeof v === "object") return { kind: "object", entries: Object.entries(v), next: 0 };
    return scalar(v);
  };
  const stack: Frame[] = [];
  const first = open(value);
  let within = typeof first === "string" ? emit(first) : (stack.push(first), emit(first.kind === "array" ? "[" : "{"));
  while (within && stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const size = frame.kind === "array" ? frame.items.length : frame.entries.length;
    if (frame.next >= size) {
      stack.pop();
      within = emit(frame.kind === "array" ? "]" : "}");
      continue;
    }
    const index = frame.next++;
    let child: JsonValue;
    let prefix = index > 0 ? "," : "";
    if (frame.kind === "array") {
      child = frame.items[index]!;
    } else {
      const [key, item] = frame.entries[index]!;
      prefix += `${quoted(key)}:`;
      child = SECRET_FIELDS.has(key) ? REDACTED : item;
    }
    const opened = open(child);
    if (typeof opened === "string") {
      within = emit(prefix + opened);
    } else {
      stack.push(opened);
      within = emit(prefix + (opened.kind === "array" ? "[" : "{"));
    }
  }
  const text = parts.join("");
  // Copied, so that the kept text does not pin the (bounded, but larger) joined one.
  return within ? { text, truncated: false } : { text: Buffer.from(text.slice(0, maxChars), "utf8").toString("utf8"), truncated: true };
}
