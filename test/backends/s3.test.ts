// The conformance suite of the shared backend interface (conformance.ts) against
// the s3:// adapter (provider/backends/s3/), on a real S3 server (moto's, started
// by this file on 127.0.0.1 through scripts/ensure-moto), and the adapter's
// refusals on that server: a missing bucket, a store that drops the conditions
// (a proxy in front of moto that strips If-None-Match and If-Match), a URL with
// credentials. Leases expire on the store's clock (whole-second Date headers):
// the checks' leases live 3 s past a renewal and a stopped holder is waited out.
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leaseRules } from "../../provider/automation/lease/record";
import { backendFor } from "../../provider/backends";
import { type ObjectStore, startS3 } from "../../testkit/object-stores";
import { type ConformanceSubject, describeConformance, PROJECT } from "./conformance";

const TTL_MS = 3_000;

let store: ObjectStore;
const saved = new Map<string, string | undefined>();
beforeAll(async () => {
  store = await startS3();
  for (const [name, value] of Object.entries(store.env)) {
    saved.set(name, process.env[name]);
    process.env[name] = value;
  }
}, 90_000);
afterAll(async () => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await store?.stop();
});

const bucketName = () => `ug-${randomBytes(6).toString("hex")}`;

async function freshBucket(): Promise<string> {
  const bucket = bucketName();
  await store.createBucket(bucket);
  return bucket;
}

const bucketOf = (url: string) => new URL(url).hostname;

const s3Subject = (): ConformanceSubject => ({
  kind: "s3",
  freshUrl: async () => store.backendUrl(await freshBucket()),
  leaseOptions: { timing: { ttlMs: TTL_MS, renewEveryMs: 1_000 } },
  stopping: (claim) => claim,
  // Past the expiry on the store's clock: its whole-second Date headers and the adapter's second of margin.
  expire: () => new Promise((resolve) => setTimeout(resolve, TTL_MS + 2_500)),
  fenced: true,
  plantPulumiLock: async (url, stack, lock) => {
    const key = `.pulumi/locks/organization/${PROJECT}/${stack}/${randomUUID()}.json`;
    await store.put(bucketOf(url), key, Buffer.from(JSON.stringify({ ...lock, username: "someone" })));
  },
});

describeConformance("s3 (moto)", s3Subject);

const claim = () => ({ runId: `run-${randomUUID().slice(0, 8)}`, host: "h", pid: 1, startedAt: Date.now(), renewedAt: Date.now() });

/** A proxy in front of moto that drops the conditions of every request: a store that ignores them. */
async function conditionStripper(target: number): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers["if-none-match"];
    delete headers["if-match"];
    const out = http.request({ host: "127.0.0.1", port: target, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("the s3:// adapter's refusals, one coded line each", () => {
  it("a bucket that does not exist: backend_bucket_missing, naming the bucket, no credential in it", async () => {
    const url = store.backendUrl(bucketName());
    const lease = backendFor(url)!.leaseStore(PROJECT, "dev", { rules: leaseRules() });
    const error = await lease.tryAcquire(claim()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "backend_bucket_missing" });
    const message = (error as Error).message;
    expect(message).toContain(bucketOf(url));
    expect(message.split("\n")).toHaveLength(1);
    for (const value of Object.values(store.env)) expect(message).not.toContain(value);
  });

  it("a store that ignores If-None-Match/If-Match is detected and refused before any lease is taken", async () => {
    const bucket = await freshBucket();
    const proxy = await conditionStripper(store.port);
    try {
      const url = store.backendUrl(bucket).replace(`127.0.0.1:${store.port}`, `127.0.0.1:${proxy.port}`);
      const backend = backendFor(url)!;
      const error = await backend.leaseStore(PROJECT, "dev", { rules: leaseRules() }).tryAcquire(claim()).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_conditions_ignored" });
      await expect(backend.shardDirectory(PROJECT, "dev").claim(["default.g"], 1)).rejects.toMatchObject({ code: "backend_conditions_ignored" });
      // Nothing of ours was left in the bucket (the probe removed its object).
      expect(await store.list(bucket, ".user-groups/")).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("no credentials in the environment: backend_credentials_rejected, nothing sent", async () => {
    const url = store.backendUrl(await freshBucket());
    const secret = process.env.AWS_SECRET_ACCESS_KEY;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    try {
      const error = await backendFor(url)!.shardDirectory(PROJECT, "dev").read().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_credentials_rejected" });
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = secret;
    }
  });

  it("a URL with credentials in it is refused, and they are not repeated", () => {
    const secret = randomBytes(12).toString("hex");
    let error: unknown;
    try {
      backendFor(`s3://AKIAX:${secret}@bucket-name?region=us-east-1`);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "backend_url_invalid" });
    expect((error as Error).message).not.toContain(secret);
  });

  it("the lease and the directory are objects of the bucket, beside Pulumi's", async () => {
    const bucket = await freshBucket();
    const backend = backendFor(store.backendUrl(bucket))!;
    const lease = backend.leaseStore(PROJECT, "dev", { rules: leaseRules() });
    const outcome = await lease.tryAcquire(claim());
    expect(outcome.acquired).toBe(true);
    await backend.shardDirectory(PROJECT, "dev").claim(["default.g"], 1);
    const keys = await store.list(bucket, ".user-groups/");
    expect(keys).toEqual(expect.arrayContaining([`.user-groups/leases/${PROJECT}/dev/lease.json`, `.user-groups/shards/${PROJECT}/dev/directory.json`]));
    const stored = JSON.parse((await store.get(bucket, `.user-groups/leases/${PROJECT}/dev/lease.json`))!.toString("utf8")) as { epoch: number };
    expect(stored.epoch).toBe(1);
    await lease.close();
  });
});
