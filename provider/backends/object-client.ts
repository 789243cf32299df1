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
 * The store's clock from a `Date` header (whole seconds): the offset to this
 * process's clock, taken half a second into the second the header names.
 */
export class StoreClock {
  private offset = 0;
  observe(dateHeader: string | null): void {
    const at = dateHeader ? Date.parse(dateHeader) : Number.NaN;
    if (Number.isFinite(at)) this.offset = at + 500 - systemClock.now();
  }
  now(): number {
    return systemClock.now() + this.offset;
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
    if ((await client.replace(key, "3", `${first}-not`)) !== undefined) throw refuse("a write conditioned on a version the object does not have was accepted");
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
