// Secrets as they cross the provider protocol. The plugin tells the engine it
// accepts secrets, so a secret input arrives wrapped ({ [SIGNATURE_KEY]:
// SECRET_SIGNATURE, value }) and an output is secret only if it goes back
// wrapped. The shared logic sees plain values; these helpers take the wrappers
// off on the way in and put them back on the way out (the token always).
import { SIGNATURE_KEY } from "../logic/reserved-values";

/** Pulumi's marker of a secret value (its SDKs call it specialSecretSig). */
export const SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270";

export type Props = Record<string, unknown>;

export interface Unwrapped {
  readonly plain: Props;
  /** Top-level keys whose value was, or held, a secret. */
  readonly secretKeys: ReadonlySet<string>;
}

function isSecretWrapper(value: unknown): value is { value: unknown } {
  return value !== null && typeof value === "object" && !Array.isArray(value) && (value as Props)[SIGNATURE_KEY] === SECRET_SIGNATURE;
}

/** A copy of `value` without secret wrappers; `found` learns whether there were any. */
function unwrapDeep(value: unknown, found: { secret: boolean }): unknown {
  if (isSecretWrapper(value)) {
    found.secret = true;
    return unwrapDeep(value.value, found);
  }
  if (Array.isArray(value)) return value.map((item) => unwrapDeep(item, found));
  if (value !== null && typeof value === "object") {
    const copy: Props = {};
    for (const [key, member] of Object.entries(value)) copy[key] = unwrapDeep(member, found);
    return copy;
  }
  return value;
}

export function unwrapSecrets(props: Props | undefined): Unwrapped {
  const plain: Props = {};
  const secretKeys = new Set<string>();
  for (const [key, value] of Object.entries(props ?? {})) {
    const found = { secret: false };
    plain[key] = unwrapDeep(value, found);
    if (found.secret) secretKeys.add(key);
  }
  return { plain, secretKeys };
}

export function secret(value: unknown): Props {
  return { [SIGNATURE_KEY]: SECRET_SIGNATURE, value };
}

/** `props` with each of `keys` that it holds wrapped as a secret. */
export function wrapSecrets(props: object, keys: Iterable<string>): Props {
  const wrapped: Props = { ...props };
  for (const key of keys) if (wrapped[key] !== undefined) wrapped[key] = secret(wrapped[key]);
  return wrapped;
}
