// AWS Signature Version 4 for S3 requests (header-signed, the payload's SHA-256
// signed too): a small signer of our own, so that the adapter needs no AWS SDK.
// The secret key only ever enters the HMAC chain: it is never in a header, a
// URL, an error or a log.
import { createHash, createHmac } from "node:crypto";

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SignedRequestInput {
  readonly method: string;
  /** The canonical path, already percent-encoded (`/bucket/key` path style, `/key` virtual-hosted). */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** host plus any headers to sign (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly region: string;
  readonly credentials: S3Credentials;
  readonly now: Date;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

/** RFC 3986 percent-encoding, as SigV4 wants it (a key's `/` kept by the caller splitting on it). */
export const encodeRfc3986 = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The canonical query string: each name and value encoded, sorted. */
export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.entries(query)
    .map(([k, v]) => `${encodeRfc3986(k)}=${encodeRfc3986(v)}`)
    .sort()
    .join("&");
}

/** The headers to send (host excepted: fetch sets it), with `authorization`, `x-amz-date`, `x-amz-content-sha256`. */
export function signRequest(input: SignedRequestInput): Record<string, string> {
  const amzDate = input.now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const payloadHash = sha256(input.body);
  const headers: Record<string, string> = {
    ...Object.fromEntries(Object.entries(input.headers).map(([k, v]) => [k.toLowerCase(), v])),
    "x-amz-content-sha256": payloadHash,
    "x-amz-date": amzDate,
    ...(input.credentials.sessionToken ? { "x-amz-security-token": input.credentials.sessionToken } : {}),
  };
  const names = Object.keys(headers).sort();
  const canonical = [input.method, input.path, canonicalQuery(input.query), names.map((n) => `${n}:${headers[n]!.trim()}\n`).join(""), names.join(";"), payloadHash].join("\n");
  const scope = `${day}/${input.region}/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${input.credentials.secretAccessKey}`, day), input.region), "s3"), "aws4_request");
  const signature = createHmac("sha256", signingKey).update(toSign).digest("hex");
  const { host: _host, ...sent } = headers;
  return { ...sent, authorization: `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}` };
}
