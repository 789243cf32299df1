// An S3 server for the tests: moto's server (PyPI moto[server], scripts/ensure-moto,
// a cached virtualenv), which honours S3's conditional writes (`If-None-Match: *`,
// `If-Match`); started through moto-atomic.py, which makes each check-then-write
// atomic as S3's is (moto's threaded server alone lets two writers pass one check). Requests are signed with AWS Signature V4 like any S3 client's,
// with a random key pair made for this server and passed in the environment only.
import { createHash, createHmac, randomBytes } from "node:crypto";
import path from "node:path";
import { ensured, expectStatus, type ObjectStore, REPO_ROOT, startStoreProcess } from "./server";

const REGION = "us-east-1";

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();
/** RFC 3986 percent-encoding, as SigV4 wants it. */
const encode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export async function startS3(): Promise<ObjectStore> {
  const motoServer = ensured(path.join(REPO_ROOT, "scripts", "ensure-moto"));
  // The virtualenv's python, beside its moto_server.
  const command = path.join(path.dirname(motoServer), "python");
  const accessKey = `AKIA${randomBytes(8).toString("hex").toUpperCase()}`;
  const secretKey = randomBytes(30).toString("base64");
  const server = await startStoreProcess({
    name: "moto",
    command,
    args: (port) => [path.join(REPO_ROOT, "testkit", "object-stores", "moto-atomic.py"), "-H", "127.0.0.1", "-p", String(port)],
    env: { AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_DEFAULT_REGION: REGION, MOTO_ALLOW_NONEXISTENT_REGION: "true" },
    readyPath: "/moto-api/",
  });
  const endpoint = `127.0.0.1:${server.port}`;

  /** A SigV4-signed request, path style (/bucket/key). */
  const request = (method: string, bucket: string, key: string | undefined, options: { query?: Record<string, string>; body?: Buffer; headers?: Record<string, string> } = {}) => {
    const now = new Date();
    const amzDate = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const day = amzDate.slice(0, 8);
    const uri = `/${encode(bucket)}${key !== undefined ? `/${key.split("/").map(encode).join("/")}` : ""}`;
    const query = Object.entries(options.query ?? {})
      .map(([k, v]) => `${encode(k)}=${encode(v)}`)
      .sort()
      .join("&");
    const payloadHash = sha256(options.body ?? "");
    const headers: Record<string, string> = { host: endpoint, "x-amz-content-sha256": payloadHash, "x-amz-date": amzDate, ...Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])) };
    const names = Object.keys(headers).sort();
    const canonical = [method, uri, query, names.map((n) => `${n}:${headers[n]!.trim()}\n`).join(""), names.join(";"), payloadHash].join("\n");
    const scope = `${day}/${REGION}/s3/aws4_request`;
    const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
    const signingKey = hmac(hmac(hmac(hmac(`AWS4${secretKey}`, day), REGION), "s3"), "aws4_request");
    const signature = createHmac("sha256", signingKey).update(toSign).digest("hex");
    const { host: _host, ...sent } = headers;
    return fetch(`http://${endpoint}${uri}${query ? `?${query}` : ""}`, {
      method,
      headers: { ...sent, authorization: `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}` },
      ...(options.body !== undefined ? { body: options.body } : {}),
    });
  };

  return {
    kind: "s3",
    port: server.port,
    pid: server.pid,
    env: { AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: REGION },
    backendUrl: (bucket) => `s3://${bucket}?endpoint=${endpoint}&s3ForcePathStyle=true&disableSSL=true&region=${REGION}`,
    async createBucket(bucket) {
      await expectStatus(await request("PUT", bucket, undefined), [200], `S3 create bucket ${bucket}`);
    },
    async list(bucket, prefix = "") {
      const response = await expectStatus(await request("GET", bucket, undefined, { query: { "list-type": "2", prefix } }), [200], `S3 list ${bucket}`);
      return [...(await response.text()).matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!.replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">"));
    },
    async get(bucket, key) {
      const response = await expectStatus(await request("GET", bucket, key), [200, 404], `S3 get ${key}`);
      return response.status === 404 ? undefined : Buffer.from(await response.arrayBuffer());
    },
    async put(bucket, key, body) {
      await (await expectStatus(await request("PUT", bucket, key, { body }), [200], `S3 put ${key}`)).arrayBuffer();
    },
    async putIfAbsent(bucket, key, body) {
      const response = await expectStatus(await request("PUT", bucket, key, { body, headers: { "if-none-match": "*" } }), [200, 409, 412], `S3 conditional put ${key}`);
      await response.arrayBuffer();
      return response.status === 200 ? "created" : "exists";
    },
    stop: () => server.stop(),
  };
}
