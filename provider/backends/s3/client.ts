// The S3 object client (../object-client.ts's primitive) over plain HTTP: a
// backend URL as Pulumi's DIY backend reads it (`s3://bucket[/prefix]?endpoint=
// host:port&s3ForcePathStyle=true&disableSSL=true&region=...`), credentials from
// the environment as Pulumi reads them (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN; AWS_REGION / AWS_DEFAULT_REGION), requests signed with
// SigV4 (sigv4.ts). Create-if-absent is `If-None-Match: *`, compare-and-swap
// `If-Match` on the ETag. Every answer is bounded; S3's error code is the only
// part of an error body a message quotes.
import { type ObjectClient, ObjectStoreError, invalidUrl, parseObjectUrl, StoreClock, type StoredObject, storeFetch, unexpectedAnswer } from "../object-client";
import { encodeRfc3986, type S3Credentials, signRequest } from "./sigv4";

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const HOST = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/;

export interface S3Target {
  readonly bucket: string;
  /** Keys' prefix ("" or ending in "/"). */
  readonly prefix: string;
  /** `http(s)://host[:port]`. */
  readonly origin: string;
  readonly pathStyle: boolean;
  readonly region: string;
}

const invalid = (why: string) => invalidUrl("s3", why);

/** The parts of an `s3://` URL (outside input: checked before use; nothing of it becomes a host or a path unchecked). */
export function s3Target(url: string, env: NodeJS.ProcessEnv = process.env): S3Target {
  const { bucket, prefix, query: q } = parseObjectUrl(url, "s3", BUCKET, "put them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  const region = q.get("region") || env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1";
  if (!/^[a-z0-9-]{1,40}$/.test(region)) throw invalid("the region is not a region name");
  const insecure = q.get("disableSSL") === "true" || q.get("disable_https") === "true";
  let endpoint = q.get("endpoint") ?? "";
  let scheme = insecure ? "http" : "https";
  const explicit = /^(https?):\/\/(.*)$/.exec(endpoint);
  if (explicit) [scheme, endpoint] = [explicit[1]!, explicit[2]!.replace(/\/+$/, "")];
  if (endpoint && !HOST.test(endpoint)) throw invalid("the endpoint is not host[:port]");
  const pathStyle = q.get("s3ForcePathStyle") === "true" || q.get("use_path_style") === "true" || (endpoint !== "" && q.get("s3ForcePathStyle") !== "false");
  const host = endpoint || (pathStyle ? `s3.${region}.amazonaws.com` : `${bucket}.s3.${region}.amazonaws.com`);
  return { bucket, prefix, origin: `${scheme}://${host}`, pathStyle: pathStyle || endpoint !== "", region };
}

/** The credentials Pulumi's S3 backend would use, from the environment (profiles and instance roles are not read). */
export function s3Credentials(env: NodeJS.ProcessEnv = process.env): S3Credentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  if (!accessKeyId || !secretAccessKey) {
    throw new ObjectStoreError("backend_credentials_rejected", "No S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones) in the environment.");
  }
  const sessionToken = env.AWS_SESSION_TOKEN?.trim();
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** S3's error code from an error body (letters only, bounded), or "". */
function s3Code(body: string): string {
  return /<Code>([A-Za-z]{1,64})<\/Code>/.exec(body.slice(0, 4_096))?.[1] ?? "";
}

const xmlText = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");

export class S3Client implements ObjectClient {
  readonly place: string;
  private readonly target: S3Target;
  private readonly clock = new StoreClock();
  private credentials: S3Credentials | undefined;

  constructor(
    readonly url: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.target = s3Target(url, env);
    this.place = `s3://${this.target.bucket}/${this.target.prefix} at ${this.target.origin}`;
  }

  now(): number {
    return this.clock.now();
  }

  private async send(method: string, key: string | undefined, options: { query?: Record<string, string>; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: Buffer; etag: string | null; code: string }> {
    this.credentials ??= s3Credentials(this.env);
    const { bucket, origin, pathStyle, region, prefix } = this.target;
    const objectPath = key === undefined ? "" : `/${`${prefix}${key}`.split("/").map(encodeRfc3986).join("/")}`;
    const path = pathStyle ? `/${bucket}${objectPath || "/"}` : objectPath || "/";
    const host = new URL(origin).host;
    const body = Buffer.from(options.body ?? "", "utf8");
    const query = options.query ?? {};
    const headers = signRequest({ method, path, query, headers: { host, ...options.headers }, body, region, credentials: this.credentials, now: new Date(this.clock.now() - 500) });
    const search = Object.entries(query).map(([k, v]) => `${encodeRfc3986(k)}=${encodeRfc3986(v)}`).join("&");
    const { status, body: bytes, headers: answered } = await storeFetch(this.place, this.clock, `${origin}${path}${search ? `?${search}` : ""}`, {
      method,
      headers,
      ...(options.body !== undefined ? { body } : {}),
    });
    const code = status >= 300 ? s3Code(bytes.toString("utf8")) : "";
    if (code === "NoSuchBucket") throw new ObjectStoreError("backend_bucket_missing", `The S3 bucket of ${this.place} does not exist: create it (or correct the backend URL).`);
    if (status === 403 || /^(InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|ExpiredToken|InvalidToken)$/.test(code)) {
      throw new ObjectStoreError("backend_credentials_rejected", `The object store ${this.place} refused the credentials (${code || "HTTP 403"}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN).`);
    }
    return { status, body: bytes, etag: answered.get("etag"), code };
  }

  private unexpected(what: string, answer: { status: number; code: string }): never {
    throw unexpectedAnswer(this.place, what, answer);
  }

  async get(key: string): Promise<StoredObject | undefined> {
    const answer = await this.send("GET", key);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200 || !answer.etag) this.unexpected(`to read ${key}`, answer);
    return { body: answer.body.toString("utf8"), version: answer.etag };
  }

  private async conditional(key: string, body: string, condition: Record<string, string>): Promise<string | undefined> {
    const answer = await this.send("PUT", key, { body, headers: { "content-type": "application/json", ...condition } });
    // 412: the condition failed; 409: a concurrent conditional write to the key won; 404: gone (If-Match on a missing object).
    if (answer.status === 412 || answer.status === 409 || answer.status === 404) return undefined;
    if (answer.status !== 200 || !answer.etag) this.unexpected(`to write ${key}`, answer);
    return answer.etag;
  }

  create(key: string, body: string): Promise<string | undefined> {
    return this.conditional(key, body, { "if-none-match": "*" });
  }

  replace(key: string, body: string, version: string): Promise<string | undefined> {
    return this.conditional(key, body, { "if-match": version });
  }

  async put(key: string, body: string): Promise<void> {
    const answer = await this.send("PUT", key, { body, headers: { "content-type": "application/json" } });
    if (answer.status !== 200) this.unexpected(`to write ${key}`, answer);
  }

  async remove(key: string): Promise<void> {
    const answer = await this.send("DELETE", key);
    if (answer.status !== 204 && answer.status !== 200 && answer.status !== 404) this.unexpected(`to delete ${key}`, answer);
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 1_000; page++) {
      const query: Record<string, string> = { "list-type": "2", prefix: `${this.target.prefix}${prefix}`, ...(token ? { "continuation-token": token } : {}) };
      const answer = await this.send("GET", undefined, { query });
      if (answer.status !== 200) this.unexpected(`to list ${prefix}`, answer);
      const xml = answer.body.toString("utf8");
      for (const match of xml.matchAll(/<Key>([^<]{1,1024})<\/Key>/g)) keys.push(xmlText(match[1]!).slice(this.target.prefix.length));
      token = /<IsTruncated>true<\/IsTruncated>/.test(xml) ? xmlText(/<NextContinuationToken>([^<]{1,1024})<\/NextContinuationToken>/.exec(xml)?.[1] ?? "") : undefined;
      if (!token) return keys;
    }
    return keys;
  }
}
