// The Azure Blob object client (../object-client.ts's primitive) over the REST
// API with Shared Key: a backend URL as Pulumi's DIY backend reads it
// (`azblob://container[/prefix]?domain=host:port&protocol=http` for an emulator,
// `azblob://container` for <account>.blob.core.windows.net), the account and
// its key from AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (SAS tokens and
// Azure AD are not read). Create-if-absent is `If-None-Match: *`,
// compare-and-swap `If-Match` on the ETag. The key only enters the HMAC.
import { createHmac } from "node:crypto";
import { isIP } from "node:net";
import { type ObjectClient, ObjectStoreError, invalidUrl, parseObjectUrl, StoreClock, type StoredObject, storeFetch, unexpectedAnswer } from "../object-client";

const VERSION = "2021-10-04";
const CONTAINER = /^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/;
const HOST = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/;

const invalid = (why: string) => invalidUrl("azblob", why);

export interface AzureTarget {
  readonly account: string;
  readonly container: string;
  readonly prefix: string;
  readonly origin: string;
  /** The emulator's form: the account is the URL path's first segment. */
  readonly accountInPath: boolean;
}

export function azureTarget(url: string, env: NodeJS.ProcessEnv = process.env): AzureTarget {
  const { bucket: container, prefix, query: q } = parseObjectUrl(url, "azblob", CONTAINER, "put them in AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY");
  const account = env.AZURE_STORAGE_ACCOUNT?.trim() ?? "";
  if (!/^[a-z0-9]{3,24}$/.test(account)) {
    throw new ObjectStoreError("backend_credentials_rejected", "No Azure storage account: set AZURE_STORAGE_ACCOUNT (3-24 lower-case letters and digits) and AZURE_STORAGE_KEY in the environment.");
  }
  const protocol = q.get("protocol") === "http" ? "http" : "https";
  const domain = q.get("domain") || "blob.core.windows.net";
  if (!HOST.test(domain)) throw invalid("the domain is not host[:port]");
  const hostname = domain.replace(/:\d+$/, "");
  const accountInPath = q.get("localemu") === "true" || isIP(hostname) !== 0 || hostname === "localhost";
  return { account, container, prefix, origin: `${protocol}://${accountInPath ? domain : `${account}.${domain}`}`, accountInPath };
}

/** Azure's error code from an error body or header (letters only, bounded), or "". */
function azureCode(body: Buffer, header: string | null): string {
  const code = header ?? /<Code>([A-Za-z]{1,64})<\/Code>/.exec(body.subarray(0, 4_096).toString("utf8"))?.[1] ?? "";
  return /^[A-Za-z]{1,64}$/.test(code) ? code : "";
}

const xmlText = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");

export class AzureBlobClient implements ObjectClient {
  readonly place: string;
  private readonly target: AzureTarget;
  private readonly clock = new StoreClock();

  constructor(
    readonly url: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.target = azureTarget(url, env);
    this.place = `azblob://${this.target.container}/${this.target.prefix} at ${this.target.origin}`;
  }

  now(): number {
    return this.clock.now();
  }

  private key(): Buffer {
    const key = this.env.AZURE_STORAGE_KEY?.trim();
    if (!key || !/^[A-Za-z0-9+/=]{16,200}$/.test(key)) throw new ObjectStoreError("backend_credentials_rejected", "No Azure storage key: set AZURE_STORAGE_KEY (base64) in the environment.");
    return Buffer.from(key, "base64");
  }

  private async send(method: string, blob: string | undefined, options: { query?: Record<string, string>; headers?: Record<string, string>; body?: string } = {}) {
    const { account, container, prefix, origin, accountInPath } = this.target;
    const blobPath = blob === undefined ? "" : `/${`${prefix}${blob}`.split("/").map(encodeURIComponent).join("/")}`;
    const path = `${accountInPath ? `/${account}` : ""}/${container}${blobPath}`;
    const query = options.query ?? {};
    const body = options.body === undefined ? undefined : Buffer.from(options.body, "utf8");
    const headers: Record<string, string> = { "x-ms-date": new Date(this.clock.now()).toUTCString(), "x-ms-version": VERSION, ...options.headers };
    const h = (name: string) => headers[name] ?? "";
    const canonicalHeaders = Object.keys(headers)
      .filter((n) => n.startsWith("x-ms-"))
      .sort()
      .map((n) => `${n}:${headers[n]!.trim()}\n`)
      .join("");
    const canonicalResource = `/${account}${path}${Object.keys(query)
      .sort()
      .map((k) => `\n${k.toLowerCase()}:${query[k]}`)
      .join("")}`;
    const length = body?.length ?? 0;
    const toSign = [method, "", "", length > 0 ? String(length) : "", "", h("content-type"), "", "", h("if-match"), h("if-none-match"), "", "", canonicalHeaders + canonicalResource].join("\n");
    const signature = createHmac("sha256", this.key()).update(toSign, "utf8").digest("base64");
    const search = new URLSearchParams(query).toString();
    const answer = await storeFetch(this.place, this.clock, `${origin}${path}${search ? `?${search}` : ""}`, {
      method,
      headers: { ...headers, authorization: `SharedKey ${account}:${signature}` },
      ...(body !== undefined ? { body } : {}),
    });
    const code = answer.status >= 300 ? azureCode(answer.body, answer.headers.get("x-ms-error-code")) : "";
    if (code === "ContainerNotFound") throw new ObjectStoreError("backend_bucket_missing", `The Azure container of ${this.place} does not exist: create it (or correct the backend URL).`);
    if (answer.status === 403 || /^(AuthenticationFailed|AuthorizationFailure|InvalidAuthenticationInfo)$/.test(code)) {
      throw new ObjectStoreError("backend_credentials_rejected", `The object store ${this.place} refused the credentials (${code || "HTTP 403"}): check AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY.`);
    }
    return { status: answer.status, body: answer.body, etag: answer.headers.get("etag"), code };
  }

  async get(key: string): Promise<StoredObject | undefined> {
    const answer = await this.send("GET", key);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200 || !answer.etag) throw unexpectedAnswer(this.place, `to read ${key}`, answer);
    return { body: answer.body.toString("utf8"), version: answer.etag };
  }

  private async upload(key: string, body: string, condition: Record<string, string>): Promise<string | undefined> {
    const answer = await this.send("PUT", key, { body, headers: { "x-ms-blob-type": "BlockBlob", "content-type": "application/octet-stream", ...condition } });
    // 409 BlobAlreadyExists (If-None-Match: *), 412 ConditionNotMet, 404 BlobNotFound (If-Match on a gone blob).
    if (answer.status === 409 || answer.status === 412 || answer.status === 404) return undefined;
    if (answer.status !== 201 || !answer.etag) throw unexpectedAnswer(this.place, `to write ${key}`, answer);
    return answer.etag;
  }

  create(key: string, body: string): Promise<string | undefined> {
    return this.upload(key, body, { "if-none-match": "*" });
  }

  replace(key: string, body: string, version: string): Promise<string | undefined> {
    return this.upload(key, body, { "if-match": version });
  }

  async put(key: string, body: string): Promise<void> {
    const answer = await this.send("PUT", key, { body, headers: { "x-ms-blob-type": "BlockBlob", "content-type": "application/octet-stream" } });
    if (answer.status !== 201) throw unexpectedAnswer(this.place, `to write ${key}`, answer);
  }

  async remove(key: string): Promise<void> {
    const answer = await this.send("DELETE", key);
    if (answer.status !== 202 && answer.status !== 200 && answer.status !== 404) throw unexpectedAnswer(this.place, `to delete ${key}`, answer);
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let marker: string | undefined;
    for (let page = 0; page < 1_000; page++) {
      const query = { restype: "container", comp: "list", prefix: `${this.target.prefix}${prefix}`, ...(marker ? { marker } : {}) };
      const answer = await this.send("GET", undefined, { query });
      if (answer.status !== 200) throw unexpectedAnswer(this.place, `to list ${prefix}`, answer);
      const xml = answer.body.toString("utf8");
      for (const match of xml.matchAll(/<Name>([^<]{1,1024})<\/Name>/g)) keys.push(xmlText(match[1]!).slice(this.target.prefix.length));
      marker = xmlText(/<NextMarker>([^<]{1,1024})<\/NextMarker>/.exec(xml)?.[1] ?? "") || undefined;
      if (!marker) return keys;
    }
    return keys;
  }
}
