// Secrets (API keys, group tokens) must never reach a log line or an error
// message. Everything the client says passes through a Redactor first.

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
