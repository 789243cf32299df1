// API keys (W1): `Authorization: Token <KEY>`, each key bound to one environment
// and either read-write or read-only. Keys are compared in constant time: both
// sides are hashed to 32 bytes (so lengths never differ) and every known key is
// compared, without stopping at the first match.
import { createHash, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { type Environment, environmentSchema } from "../provider/wire/schemas.js";

/** @internal */
export const apiKeyConfigSchema = z.object({
  key: z
    .string()
    .min(1, "an API key must not be empty")
    .regex(/^[\x21-\x7e]+$/, "an API key must be printable ASCII without spaces"),
  environment: environmentSchema,
  readOnly: z.boolean().optional(),
});
/** One API key the server accepts (written out so that the declarations never mention zod). */
export interface ApiKeyConfig {
  /** The key itself: printable ASCII without spaces. */
  key: string;
  /** The environment whose groups the key sees and changes. */
  environment: Environment;
  /** A read-only key may only GET a group that exists (W1). */
  readOnly?: boolean | undefined;
}

/** A key as the server uses it: the secret itself never leaves this module's records. */
export interface ApiKey {
  /** Index of the key in the configuration: a name for it that is not secret. */
  readonly id: number;
  readonly environment: ApiKeyConfig["environment"];
  readonly readOnly: boolean;
  /** The namespace the key was made for (namespaces.ts); undefined for the server's own keys. */
  readonly namespace?: string;
}

export type AuthResult =
  | { ok: true; key: ApiKey }
  | { ok: false; reason: "missing" | "malformed" | "unknown"; presented?: string };

const AUTH_PATTERN = /^Token +([\x21-\x7e]+) *$/i;

function sha256(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

export class KeyRing {
  /** Hashes computed once when a key is added: the hot path hashes only the presented key. */
  private entries: Array<{ hash: Buffer; key: ApiKey; secret: string }>;
  private secretList: readonly string[];
  /** Raised when keys are removed, so that a connection's remembered result is judged again. */
  generation = 0;

  constructor(configs: readonly ApiKeyConfig[]) {
    this.entries = configs.map((c, id) => ({
      hash: sha256(c.key),
      key: { id, environment: c.environment, readOnly: c.readOnly === true },
      secret: c.key,
    }));
    this.secretList = configs.map((c) => c.key);
  }

  /** Every key accepted now (the journal and the log redact them). */
  get secrets(): readonly string[] {
    return this.secretList;
  }

  /** Adds a namespace's keys; their ids count from 0 within the namespace (its own rate windows). */
  addNamespace(namespace: string, configs: readonly ApiKeyConfig[]): void {
    for (const [id, c] of configs.entries()) {
      this.entries.push({ hash: sha256(c.key), key: { id, environment: c.environment, readOnly: c.readOnly === true, namespace }, secret: c.key });
    }
    this.secretList = this.entries.map((e) => e.secret);
  }

  /** Removes a namespace's keys: they are unknown (401) from now on. */
  removeNamespace(namespace: string): void {
    this.entries = this.entries.filter((e) => e.key.namespace !== namespace);
    this.secretList = this.entries.map((e) => e.secret);
    this.generation += 1;
  }

  authenticate(header: string | undefined): AuthResult {
    if (header === undefined || header === "") return { ok: false, reason: "missing" };
    const match = AUTH_PATTERN.exec(header);
    const presented = match?.[1];
    if (presented === undefined) return { ok: false, reason: "malformed" };
    const hash = sha256(presented);
    let found: ApiKey | undefined;
    for (const entry of this.entries) {
      // No early exit: the time taken does not tell which key (if any) matched.
      if (timingSafeEqual(entry.hash, hash) && found === undefined) found = entry.key;
    }
    return found === undefined ? { ok: false, reason: "unknown", presented } : { ok: true, key: found };
  }
}

/**
 * A keep-alive client sends the same Authorization header on every request of a
 * connection, so each connection's last header and its result are remembered:
 * the presented key is hashed once per connection, not once per request. A hit
 * compares the header with the one this same connection sent before, never with
 * a configured key, so it tells a caller nothing it did not send itself.
 */
export class ConnectionAuth {
  private readonly last = new WeakMap<object, { header: string | undefined; result: AuthResult; generation: number }>();

  constructor(private readonly keys: KeyRing) {}

  authenticate(connection: object, header: string | undefined): AuthResult {
    const seen = this.last.get(connection);
    if (seen !== undefined && seen.header === header && seen.generation === this.keys.generation) return seen.result;
    const result = this.keys.authenticate(header);
    this.last.set(connection, { header, result, generation: this.keys.generation });
    return result;
  }
}

/** Constant-time comparison of two secrets of any length (used for the admin token). */
export function secretEquals(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
