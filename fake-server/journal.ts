// The request journal behind `GET /__admin/requests`: a bounded ring buffer.
// Entries keep the parsed body as received; redaction happens when the journal is
// read, so the hot path pays nothing for it. Redacted: every value of a field
// named `token` or `current_token` (at any depth), every API key, and anything
// shaped like an issued token (64 hex digits, see ISSUED_TOKEN_PATTERN) wherever it appears.
import type { JsonValue } from "../provider/wire/schemas.js";

export const REDACTED = "[REDACTED]";
const SECRET_FIELDS = new Set(["token", "current_token"]);
/** Issued tokens match ISSUED_TOKEN_PATTERN; any run of 64 hex digits is treated as one. */
const TOKEN_LIKE = /[0-9a-fA-F]{64}/g;

export interface JournalEntry {
  time: string;
  method: string;
  path: string;
  /** The status answered; null when no answer was sent (a `reset` or `drop-after-apply` fault). */
  status: number | null;
  /** Error code of a failure, for quick reading. */
  code?: string;
  environment?: string;
  /** The request body when it parsed as JSON, else null. */
  body: JsonValue | null;
  /** The fault rule action that fired, if any. */
  fault?: string;
  durationMs: number;
}

/**
 * An entry as recorded, before redaction; `presentedKey` is any key sent, valid
 * or not. The time is kept as a number and formatted when read: the hot path
 * pays for no date string.
 */
export interface RawJournalEntry extends Omit<JournalEntry, "time"> {
  /** When the request arrived, in milliseconds since the epoch. */
  startedAt: number;
  presentedKey?: string;
}

export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

export class Journal {
  private readonly entries: RawJournalEntry[] = [];
  private start = 0;

  constructor(private readonly capacity: number) {}

  add(entry: RawJournalEntry): void {
    if (this.capacity <= 0) return;
    if (this.entries.length < this.capacity) {
      this.entries.push(entry);
    } else {
      this.entries[this.start] = entry;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  /** Oldest first, redacted. `keys` are the configured API keys. */
  read(keys: readonly string[]): JournalEntry[] {
    const ordered = [...this.entries.slice(this.start), ...this.entries.slice(0, this.start)];
    return ordered.map((raw) => {
      const secrets = raw.presentedKey === undefined ? keys : [...keys, raw.presentedKey];
      const { presentedKey: _omit, startedAt, ...entry } = raw;
      return {
        time: isoTime(startedAt),
        ...entry,
        path: redactString(entry.path, secrets),
        body: redactJson(entry.body, secrets),
      };
    });
  }

  clear(): void {
    this.entries.length = 0;
    this.start = 0;
  }
}

/**
 * Keys shorter than this are only redacted where a whole string equals them: a
 * test key like "ro" would otherwise mangle every word that contains it.
 */
export const MIN_SUBSTRING_SECRET = 8;

export function redactString(value: string, secrets: readonly string[]): string {
  let out = value.replace(TOKEN_LIKE, REDACTED);
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    if (out === secret) return REDACTED;
    if (secret.length >= MIN_SUBSTRING_SECRET && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

export function redactJson(value: JsonValue | null, secrets: readonly string[]): JsonValue | null {
  if (typeof value === "string") return redactString(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactJson(v, secrets));
  if (value !== null && typeof value === "object") {
    const out: { [key: string]: JsonValue } = {};
    for (const [k, v] of Object.entries(value)) {
      // Keys can hold secrets too; JSON.parse makes `__proto__` an own key, so define, never assign.
      const key = redactString(k, secrets);
      const redacted = SECRET_FIELDS.has(k) ? REDACTED : redactJson(v, secrets);
      Object.defineProperty(out, key, { value: redacted, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}
