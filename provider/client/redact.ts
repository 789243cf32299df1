// Secrets (API keys, group tokens, a passphrase, a backend URL's password) must
// never reach a log line or an error message: the one place that scrubs them, in
// the lowest layer that needs it (the client), imported from here by every caller.
// Everything the client says passes through a Redactor first; every error the
// automation layer and the CLI throw goes through scrubSecrets or scrubText (with
// the values automation/engine/stack-config.ts's secretValuesOf collects of a run:
// which values are secret depends on the run's options and its backend URL, which
// only the automation layer knows). Tested in test/client/redact.unit.test.ts.

export const REDACTED = "[REDACTED]";

/** Field names whose values are secrets wherever they appear in a JSON body. */
const SECRET_FIELDS = new Set(["token", "current_token", "apiKey", "api_key", "authorization"]);

export class Redactor {
  private readonly secrets = new Set<string>();

  /**
   * Remembers a secret so that later text containing it is redacted, whatever its
   * length: a short key also blanks the same letters elsewhere, which beats leaking it.
   */
  add(secret: string | undefined): void {
    if (secret) this.secrets.add(secret);
  }

  text(value: string): string {
    let out = value;
    for (const secret of this.secrets) out = out.split(secret).join(REDACTED);
    // Anything shaped like an issued token (64 hex) is redacted even if we never saw it.
    return out.replace(/\b[0-9a-f]{64}\b/g, REDACTED);
  }

  /** A copy of a JSON-like value with secret fields and known secrets replaced. */
  value(input: unknown): unknown {
    if (typeof input === "string") return this.text(input);
    if (Array.isArray(input)) return input.map((item) => this.value(item));
    if (input !== null && typeof input === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(input)) {
        out[key] = SECRET_FIELDS.has(key) && item !== undefined && item !== null ? REDACTED : this.value(item);
      }
      return out;
    }
    return input;
  }
}

/** The text with every secret (and anything shaped like a token) replaced. */
export function scrubText(text: string, secrets: readonly string[]): string {
  const redactor = new Redactor();
  for (const secret of secrets) redactor.add(secret);
  return redactor.text(text);
}

/**
 * The same error (class and fields kept, so `instanceof` still works) with every
 * secret (and anything shaped like a token) replaced: in its message and stack,
 * and in every string it holds, however deep (a CommandError's `commandResult`,
 * the process error inside it with its own stdout and stderr, the `cause` chain).
 */
export function scrubSecrets(error: unknown, secrets: readonly string[]): unknown {
  if (!(error instanceof Error)) return new Error(scrubText(String(error), secrets));
  scrubObject(error, secrets, new Set(), 0);
  return error;
}

/** Far deeper than any error Pulumi or Node makes. */
const MAX_SCRUB_DEPTH = 8;

function scrubObject(value: object, secrets: readonly string[], seen: Set<object>, depth: number): void {
  if (seen.has(value) || depth > MAX_SCRUB_DEPTH) return;
  seen.add(value);
  const record = value as Record<string, unknown>;
  // message, stack and cause are own but not always enumerable.
  const keys = new Set([...Object.keys(value), ...(value instanceof Error ? ["message", "stack", "cause"] : [])]);
  for (const key of keys) {
    let field: unknown;
    try {
      field = record[key];
    } catch {
      continue; // a getter that throws: nothing we can read, nothing it shows
    }
    if (typeof field === "string") {
      const scrubbed = scrubText(field, secrets);
      if (scrubbed !== field) {
        try {
          record[key] = scrubbed;
        } catch {
          // read-only: left as is (none of Pulumi's or Node's error fields are)
        }
      }
    } else if (Array.isArray(field) && !Object.isFrozen(field)) {
      // A list of lines (RunFailedError.diagnostics) or of errors (AggregateError.errors).
      for (let i = 0; i < field.length; i++) {
        const item: unknown = field[i];
        if (typeof item === "string") field[i] = scrubText(item, secrets);
        else if (item instanceof Error) scrubObject(item, secrets, seen, depth + 1);
      }
    } else if (field instanceof Error || (key === "commandResult" && field !== null && typeof field === "object")) {
      // Only errors and Pulumi's captured command result: never an object the caller may still use (a workspace, options).
      scrubObject(field, secrets, seen, depth + 1);
    }
  }
}
