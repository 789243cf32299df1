// What the object-store adapters (s3/, and the ones after it) share: the one
// primitive they are built on — an object client with create-if-absent and
// compare-and-swap on an object's version (S3's ETag with `If-None-Match: *` /
// `If-Match`, Azure's ETag, GCS's generation) — the store's own clock read off
// its answers, the check that the store really honours the conditions, and the
// coded errors of a store that cannot be used. The lease, the shard directory
// and the rate budget on top of it are object-lease.ts and object-stores.ts.
import { randomUUID } from "node:crypto";
import { systemClock } from "../clock";
import { UserGroupsError } from "../wire/errors";

/** An object's body and the version a conditional write names. */
export interface StoredObject {
  readonly body: string;
  readonly version: string;
}

/** The primitive of an object store, keys relative to the backend's root (its prefix applied by the client). */
export interface ObjectClient {
  /** Where, for messages: scheme, bucket and endpoint host, never a credential. */
  readonly place: string;
  /** The backend URL itself, as the engine gets it (no credential in it: those travel in the environment). */
  readonly url: string;
  get(key: string): Promise<StoredObject | undefined>;
  /** Create-if-absent: the new version, or undefined when the key exists. */
  create(key: string, body: string): Promise<string | undefined>;
  /** Compare-and-swap: the new version, or undefined when the object is no longer at `version` (or is gone). */
  replace(key: string, body: string, version: string): Promise<string | undefined>;
  /** A plain write (an object only its writer writes: a waiter's own entry). */
  put(key: string, body: string): Promise<void>;
  remove(key: string): Promise<void>;
  /** The keys under a prefix (relative to the root, like every key here). */
  list(prefix: string): Promise<string[]>;
  /** The store's clock (ms since the epoch), as its last answer told it; this process's until one has answered. */
  now(): number;
}

/** A store's answer that no request can fix (a missing bucket, credentials refused, conditions ignored, a bad URL). */
export class ObjectStoreError extends UserGroupsError {
  constructor(code: "backend_bucket_missing" | "backend_credentials_rejected" | "backend_conditions_ignored" | "backend_url_invalid" | "backend_unreachable", message: string) {
    super(code, message);
    this.name = "ObjectStoreError";
  }
}

/**
 * The store's clock from its `Date` headers (whole seconds): each answer bounds
 * the offset to this process's clock from below (the header's second began
 * before the answer arrived) and from above (it ended after the request left;
 * the tightest bounds seen are kept, reset when they cross: a clock that jumped).
 * The offset used is the one within the bounds nearest to zero: hosts whose
 * clocks agree with the store's (NTP) then agree with each other to the
 * millisecond, where the middle of a second-wide window would set two of them up
 * to a second apart; a host that is off by more is moved to the nearest bound.
 */
export class StoreClock {
  private low = Number.NEGATIVE_INFINITY;
  private high = Number.POSITIVE_INFINITY;
  observe(dateHeader: string | null, sentAt: number, receivedAt: number): void {
    const at = dateHeader ? Date.parse(dateHeader) : Number.NaN;
    if (!Number.isFinite(at)) return;
    const [low, high] = [at - receivedAt, at + 1_000 - sentAt];
    if (low > this.high || high < this.low) [this.low, this.high] = [low, high];
    else [this.low, this.high] = [Math.max(this.low, low), Math.min(this.high, high)];
  }
  now(): number {
    return systemClock.now() + this.offset();
  }
  /** The offset to this process's clock in use: zero when the headers allow it. */
  offset(): number {
    return Number.isFinite(this.low) ? Math.min(Math.max(0, this.low), this.high) : 0;
  }
}

/** Checked once per store and process: places whose conditions were seen honoured. */
const verified = new Map<string, Promise<void>>();

/**
 * Refuses a store that ignores the conditions (a proxy that drops the headers,
 * an old emulator): a second create-if-absent of one key must be refused, and so
 * must a compare-and-swap on a version the object does not have. A store that
 * accepted either would let two holders both win: it is not trusted.
 */
export function verifyConditions(client: ObjectClient): Promise<void> {
  let check = verified.get(client.place);
  if (check === undefined) {
    check = probe(client);
    verified.set(client.place, check);
    check.catch(() => verified.delete(client.place));
  }
  return check;
}

async function probe(client: ObjectClient): Promise<void> {
  const key = `.user-groups/probes/${randomUUID()}`;
  const first = await client.create(key, "1");
  try {
    const refuse = (what: string) =>
      new ObjectStoreError(
        "backend_conditions_ignored",
        `The object store ${client.place} ignores conditional writes (${what}): two runs could both take one lease, so it is not used. Use a store that honours If-None-Match/If-Match (or generation preconditions).`,
      );
    if (first === undefined) throw refuse("a create of a fresh key was refused");
    if ((await client.create(key, "2")) !== undefined) throw refuse("a second create-if-absent of one key was accepted");
    // A version the object does not have, in the store's own form (an ETag, a generation number).
    const other = /^[0-9]{1,20}$/.test(first) ? String(BigInt(first) + 1n) : `"${first.replace(/"/g, "")}-not"`;
    if ((await client.replace(key, "3", other)) !== undefined) throw refuse("a write conditioned on a version the object does not have was accepted");
    if ((await client.get(key))?.body !== "1") throw refuse("a refused write changed the object");
  } finally {
    await client.remove(key).catch(() => undefined);
  }
}

/**
 * Applies `change` to the object at `key` with compare-and-swap until it holds
 * (another writer in between: read again, apply again). `change` answers the
 * new body (or undefined: nothing to write) and the call's result.
 */
export async function updateObject<T>(client: ObjectClient, key: string, change: (body: string | undefined) => { body?: string; result: T }, attempts = 50): Promise<T> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const current = await client.get(key);
    const { body, result } = change(current?.body);
    if (body === undefined) return result;
    const written = current === undefined ? await client.create(key, body) : await client.replace(key, body, current.version);
    if (written !== undefined) return result;
    // Lost the race: back off a little (jittered) so that racing writers spread out.
    await systemClock.sleep(systemClock.random() * Math.min(200, 10 * 2 ** attempt));
  }
  throw new ObjectStoreError("backend_unreachable", `The object ${key} of ${client.place} kept changing under ${attempts} conditional writes in a row; ask again.`);
}

const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;

/** What a store answered: its status, its body (bounded), its headers. */
export interface StoreAnswer {
  readonly status: number;
  readonly body: Buffer;
  readonly headers: Headers;
}

/** The codes of a failed connection worth naming (the system's and undici's: short, plain). */
const CONNECTION_CODE = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

/**
 * A request that failed on its way (not an answer of the store's): the
 * connection refused, reset, cut mid-answer (undici's bare `terminated`, whose
 * cause, if any, is an `UND_ERR_SOCKET`), timed out, or its body's read aborted.
 * Each is `backend_unreachable` (ask again), named by the first code in the
 * error's cause chain (else `terminated` for a cut answer, else the error's
 * name): never its message, nor the error itself as a cause (its message or
 * its request may carry the URL, a signed one, or a header).
 */
export function unreachableStore(place: string, error: unknown, timedOut = false): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  let code: string | undefined;
  let seen = error;
  for (let depth = 0; depth < 5 && typeof seen === "object" && seen !== null && code === undefined; depth++) {
    const candidate = (seen as { code?: unknown }).code;
    if (typeof candidate === "string" && CONNECTION_CODE.test(candidate)) code = candidate;
    seen = (seen as { cause?: unknown }).cause;
  }
  if (timedOut) code = `no answer in ${REQUEST_TIMEOUT_MS / 1_000} s`;
  else if (code === undefined && error instanceof Error && error.message === "terminated") code = "terminated";
  else if (code === undefined) {
    const name = error instanceof Error ? error.name : "";
    code = CONNECTION_CODE.test(name) ? name : "error";
  }
  return new ObjectStoreError("backend_unreachable", `The object store ${place} cannot be reached or cut the connection (${code}); ask again; if it lasts, check the backend URL and that the store is up.`);
}

/**
 * One HTTP request to a store, with a deadline on the one clock, the store's
 * clock read off its Date header, the answer bounded. A failure to reach it, or
 * a connection cut before its answer's last byte, is `backend_unreachable`
 * (unreachableStore: the system's code only, never the request's URL or headers).
 */
export async function storeFetch(place: string, clock: StoreClock, url: string, init: { method: string; headers: Record<string, string>; body?: Buffer }): Promise<StoreAnswer> {
  const timedOut = new AbortController();
  const answered = new AbortController();
  void systemClock.sleep(REQUEST_TIMEOUT_MS, answered.signal, { keepAlive: false }).then(() => timedOut.abort(), () => undefined);
  try {
    const sentAt = systemClock.now();
    const response = await fetch(url, { ...init, signal: timedOut.signal, redirect: "manual" });
    clock.observe(response.headers.get("date"), sentAt, systemClock.now());
    if (Number(response.headers.get("content-length") ?? 0) > MAX_ANSWER_BYTES) {
      await response.body?.cancel();
      throw new ObjectStoreError("backend_unreachable", `The object store ${place} answered more than ${MAX_ANSWER_BYTES} bytes for one object.`);
    }
    return { status: response.status, body: Buffer.from(await response.arrayBuffer()), headers: response.headers };
  } catch (error) {
    throw unreachableStore(place, error, timedOut.signal.aborted);
  } finally {
    answered.abort();
  }
}

/** A store's answer no caller expects: `backend_unreachable`, with the status and the store's own (checked) error code. */
export function unexpectedAnswer(place: string, what: string, answer: { status: number; code: string }): ObjectStoreError {
  return new ObjectStoreError("backend_unreachable", `The object store ${place} failed ${what}: HTTP ${answer.status}${answer.code ? ` ${answer.code}` : ""}; ask again.`);
}

/** A store's URL parts every object store shares: the bucket (container), the keys' prefix, the query. */
export interface ObjectUrl {
  readonly bucket: string;
  /** "" or ending in "/". */
  readonly prefix: string;
  readonly query: URLSearchParams;
}

/** The error of a malformed backend URL of `scheme`. */
export const invalidUrl = (scheme: string, why: string) => new ObjectStoreError("backend_url_invalid", `The ${scheme}:// backend URL is not usable: ${why}.`);

/**
 * `<scheme>://bucket[/prefix]?…` checked before use (outside input): no user or
 * password in it (`credentialsHint`: where they go instead), a bucket name the
 * store allows, no `.`/`..` in the prefix.
 */
export function parseObjectUrl(url: string, scheme: string, bucketName: RegExp, credentialsHint: string): ObjectUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidUrl(scheme, "not a URL");
  }
  if (parsed.protocol !== `${scheme}:`) throw invalidUrl(scheme, `not ${scheme}://`);
  if (parsed.username || parsed.password) throw invalidUrl(scheme, `it holds credentials (${credentialsHint})`);
  if (!bucketName.test(parsed.hostname)) throw invalidUrl(scheme, "the bucket (container) name is not one the store allows");
  let segments: string[];
  try {
    segments = decodeURIComponent(parsed.pathname).split("/").filter((s) => s !== "");
  } catch {
    throw invalidUrl(scheme, "its path is not percent-encoded right");
  }
  if (segments.some((s) => s === "." || s === ".." || s.includes("\u0000"))) throw invalidUrl(scheme, "its path has . or .. segments");
  return { bucket: parsed.hostname, prefix: segments.length > 0 ? `${segments.join("/")}/` : "", query: parsed.searchParams };
}
