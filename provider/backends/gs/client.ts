// The GCS object client (../object-client.ts's primitive) over the JSON API:
// a backend URL as Pulumi's DIY backend reads it (`gs://bucket[/prefix]`), the
// endpoint from STORAGE_EMULATOR_HOST when set (an emulator, as Pulumi's Go
// client reads it), else storage.googleapis.com; the bearer token from
// GOOGLE_OAUTH_ACCESS_TOKEN (service-account files are not read). Create-if-absent
// is `ifGenerationMatch=0`, compare-and-swap `ifGenerationMatch=<generation>`.
import { type ObjectClient, ObjectStoreError, invalidUrl, parseObjectUrl, StoreClock, type StoredObject, storeFetch, unexpectedAnswer } from "../object-client";

const BUCKET = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;
const HOST = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/;

export interface GcsTarget {
  readonly bucket: string;
  readonly prefix: string;
  /** `http(s)://host[:port]`. */
  readonly origin: string;
}

const invalid = (why: string) => invalidUrl("gs", why);

export function gcsTarget(url: string, env: NodeJS.ProcessEnv = process.env): GcsTarget {
  const { bucket, prefix } = parseObjectUrl(url, "gs", BUCKET, "put a token in GOOGLE_OAUTH_ACCESS_TOKEN");
  let origin = "https://storage.googleapis.com";
  const emulator = env.STORAGE_EMULATOR_HOST?.trim();
  if (emulator) {
    const explicit = /^(https?):\/\/(.*?)\/*$/.exec(emulator);
    const host = explicit ? explicit[2]! : emulator;
    if (!HOST.test(host)) throw invalid("STORAGE_EMULATOR_HOST is not host[:port]");
    origin = `${explicit ? explicit[1] : "http"}://${host}`;
  }
  return { bucket, prefix, origin };
}

/** GCS's error reason from a JSON error body (letters only, bounded), or "". */
function gcsReason(body: Buffer): string {
  const text = body.subarray(0, 4_096).toString("utf8");
  return /"reason"\s*:\s*"([A-Za-z]{1,64})"/.exec(text)?.[1] ?? "";
}

export class GcsClient implements ObjectClient {
  readonly place: string;
  private readonly target: GcsTarget;
  private readonly clock = new StoreClock();

  constructor(
    readonly url: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.target = gcsTarget(url, env);
    this.place = `gs://${this.target.bucket}/${this.target.prefix} at ${this.target.origin}`;
  }

  now(): number {
    return this.clock.now();
  }

  private token(): string {
    const token = this.env.GOOGLE_OAUTH_ACCESS_TOKEN?.trim();
    if (!token) throw new ObjectStoreError("backend_credentials_rejected", "No GCS credentials: set GOOGLE_OAUTH_ACCESS_TOKEN in the environment.");
    return token;
  }

  private async send(method: string, path: string, query: Record<string, string>, body?: string): Promise<{ status: number; body: Buffer; code: string }> {
    const search = new URLSearchParams(query).toString();
    const answer = await storeFetch(this.place, this.clock, `${this.target.origin}${path}${search ? `?${search}` : ""}`, {
      method,
      headers: { authorization: `Bearer ${this.token()}`, ...(body !== undefined ? { "content-type": "application/octet-stream" } : {}) },
      ...(body !== undefined ? { body: Buffer.from(body, "utf8") } : {}),
    });
    const code = answer.status >= 300 ? gcsReason(answer.body) : "";
    if (answer.status === 401 || answer.status === 403) {
      throw new ObjectStoreError("backend_credentials_rejected", `The object store ${this.place} refused the credentials (${code || `HTTP ${answer.status}`}): check GOOGLE_OAUTH_ACCESS_TOKEN.`);
    }
    return { status: answer.status, body: answer.body, code };
  }

  private bucketPath(): string {
    return `/storage/v1/b/${encodeURIComponent(this.target.bucket)}`;
  }

  private objectPath(key: string): string {
    return `${this.bucketPath()}/o/${encodeURIComponent(`${this.target.prefix}${key}`)}`;
  }

  /** A 404 where the object cannot be the missing thing: the bucket is (asked, to say so for sure). */
  private async missing(what: string, answer: { status: number; code: string }): Promise<never> {
    const bucket = await this.send("GET", this.bucketPath(), {});
    if (bucket.status === 404) throw new ObjectStoreError("backend_bucket_missing", `The GCS bucket of ${this.place} does not exist: create it (or correct the backend URL).`);
    throw unexpectedAnswer(this.place, what, answer);
  }

  async get(key: string): Promise<StoredObject | undefined> {
    const meta = await this.send("GET", this.objectPath(key), {});
    if (meta.status === 404) return undefined;
    if (meta.status !== 200) throw unexpectedAnswer(this.place, `to read ${key}`, meta);
    const generation = String((JSON.parse(meta.body.toString("utf8")) as { generation?: unknown }).generation ?? "");
    if (!/^[0-9]{1,20}$/.test(generation)) throw unexpectedAnswer(this.place, `to read ${key} (no generation)`, meta);
    // The bytes of that generation: a newer one written meanwhile answers 404 (read again from the top).
    const media = await this.send("GET", this.objectPath(key), { alt: "media", generation });
    if (media.status === 404) return this.get(key);
    if (media.status !== 200) throw unexpectedAnswer(this.place, `to read ${key}`, media);
    return { body: media.body.toString("utf8"), version: generation };
  }

  private async upload(key: string, body: string, condition: Record<string, string>): Promise<string | undefined> {
    const path = `/upload/storage/v1/b/${encodeURIComponent(this.target.bucket)}/o`;
    const answer = await this.send("POST", path, { uploadType: "media", name: `${this.target.prefix}${key}`, ...condition }, body);
    if (answer.status === 412 || answer.status === 409) return undefined;
    if (answer.status === 404) return this.missing(`to write ${key}`, answer);
    if (answer.status !== 200) throw unexpectedAnswer(this.place, `to write ${key}`, answer);
    const generation = String((JSON.parse(answer.body.toString("utf8")) as { generation?: unknown }).generation ?? "");
    if (!/^[0-9]{1,20}$/.test(generation)) throw unexpectedAnswer(this.place, `to write ${key} (no generation)`, answer);
    return generation;
  }

  create(key: string, body: string): Promise<string | undefined> {
    return this.upload(key, body, { ifGenerationMatch: "0" });
  }

  replace(key: string, body: string, version: string): Promise<string | undefined> {
    return this.upload(key, body, { ifGenerationMatch: version });
  }

  async put(key: string, body: string): Promise<void> {
    await this.upload(key, body, {});
  }

  async remove(key: string): Promise<void> {
    const answer = await this.send("DELETE", this.objectPath(key), {});
    if (answer.status !== 204 && answer.status !== 200 && answer.status !== 404) throw unexpectedAnswer(this.place, `to delete ${key}`, answer);
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < 1_000; page++) {
      const answer = await this.send("GET", `${this.bucketPath()}/o`, { prefix: `${this.target.prefix}${prefix}`, ...(pageToken ? { pageToken } : {}) });
      if (answer.status === 404) return this.missing(`to list ${prefix}`, answer);
      if (answer.status !== 200) throw unexpectedAnswer(this.place, `to list ${prefix}`, answer);
      const parsed = JSON.parse(answer.body.toString("utf8")) as { items?: Array<{ name?: unknown }>; nextPageToken?: unknown };
      for (const item of parsed.items ?? []) if (typeof item.name === "string") keys.push(item.name.slice(this.target.prefix.length));
      pageToken = typeof parsed.nextPageToken === "string" && parsed.nextPageToken ? parsed.nextPageToken : undefined;
      if (!pageToken) return keys;
    }
    return keys;
  }
}
