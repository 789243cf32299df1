// The conformance suite (conformance.ts) and the refusals every object-store
// adapter owes (provider/backends/object-*.ts), against one real emulator this
// file starts on 127.0.0.1 and stops (testkit/object-stores): a missing bucket,
// a store that drops the conditions (a proxy in front of the emulator that
// strips them, where the store's authentication lets it: not Azurite, whose
// Shared Key signs the condition headers), the lease and the directory as
// objects of the bucket. Leases expire on the store's clock (whole-second Date
// headers): the checks' leases live 3 s past a renewal, a stopped holder is waited out.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leaseRules } from "../../provider/automation/lease/record";
import { AzureBlobClient, backendFor, GcsClient, type ObjectClient, S3Client } from "../../provider/backends";
import { isRetryableError } from "../../testkit/jepsen/retryable";
import { startToxiproxy } from "../../testkit/jepsen/toxiproxy";
import { conditionStripper, type ObjectStore } from "../../testkit/object-stores";
import { type ConformanceSubject, describeConformance, PROJECT } from "./conformance";

const TTL_MS = 3_000;

export interface ObjectStoreSuite {
  /** The running store (set once beforeAll has run). */
  store(): ObjectStore;
  freshBucket(): Promise<string>;
}

const clients: Record<ObjectStore["kind"], (url: string, env: NodeJS.ProcessEnv) => ObjectClient> = {
  s3: (url, env) => new S3Client(url, env),
  azblob: (url, env) => new AzureBlobClient(url, env),
  gs: (url, env) => new GcsClient(url, env),
};

const claim = () => ({ runId: `run-${randomUUID().slice(0, 8)}`, host: "h", pid: 1, startedAt: Date.now(), renewedAt: Date.now() });

export function describeObjectStore(name: string, start: () => Promise<ObjectStore>, options: { readonly stripsConditions: boolean }): ObjectStoreSuite {
  let store: ObjectStore;
  const saved = new Map<string, string | undefined>();
  beforeAll(async () => {
    store = await start();
    for (const [variable, value] of Object.entries(store.env)) {
      saved.set(variable, process.env[variable]);
      process.env[variable] = value;
    }
  }, 90_000);
  afterAll(async () => {
    for (const [variable, value] of saved) {
      if (value === undefined) delete process.env[variable];
      else process.env[variable] = value;
    }
    await store?.stop();
  });

  const bucketName = () => `ug-${randomBytes(6).toString("hex")}`;
  const freshBucket = async () => {
    const bucket = bucketName();
    await store.createBucket(bucket);
    return bucket;
  };
  const bucketOf = (url: string) => new URL(url).hostname;
  /** The store's URL with its port replaced (a proxy's). */
  const through = (url: string, port: number) => url.replace(`127.0.0.1:${store.port}`, `127.0.0.1:${port}`);

  describeConformance(name, () => ({
    kind: store.kind,
    freshUrl: async () => store.backendUrl(await freshBucket()),
    leaseOptions: { timing: { ttlMs: TTL_MS, renewEveryMs: 1_000 } },
    stopping: (c) => c,
    // Past the expiry on the store's clock: its whole-second Date headers and the adapter's second of margin.
    expire: () => new Promise((resolve) => setTimeout(resolve, TTL_MS + 2_500)),
    fenced: true,
    plantPulumiLock: async (url, stack, lock) => {
      const key = `.pulumi/locks/organization/${PROJECT}/${stack}/${randomUUID()}.json`;
      await store.put(bucketOf(url), key, Buffer.from(JSON.stringify({ ...lock, username: "someone" })));
    },
  }) satisfies ConformanceSubject);

  describe(`the ${name} adapter's refusals, one coded line each`, () => {
    it("a bucket that does not exist: backend_bucket_missing, naming the bucket, no credential in it", async () => {
      const url = store.backendUrl(bucketName());
      const lease = backendFor(url)!.leaseStore(PROJECT, "dev", { rules: leaseRules() });
      const error = await lease.tryAcquire(claim()).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_bucket_missing" });
      const message = (error as Error).message;
      expect(message).toContain(bucketOf(url));
      expect(message.split("\n")).toHaveLength(1);
      for (const [variable, value] of Object.entries(store.env)) if (/KEY|SECRET|TOKEN/.test(variable)) expect(message).not.toContain(value);
    });

    it.runIf(options.stripsConditions)("a store that ignores its conditions is detected and refused before any lease is taken", async () => {
      const bucket = await freshBucket();
      const proxy = await conditionStripper(store.port);
      const [variable, value] = Object.entries(store.env).find(([, v]) => v.includes(`127.0.0.1:${store.port}`)) ?? [];
      if (variable) process.env[variable] = through(value!, proxy.port);
      try {
        const backend = backendFor(through(store.backendUrl(bucket), proxy.port))!;
        const error = await backend.leaseStore(PROJECT, "dev", { rules: leaseRules() }).tryAcquire(claim()).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: "backend_conditions_ignored" });
        await expect(backend.shardDirectory(PROJECT, "dev").claim(["default.g"], 1)).rejects.toMatchObject({ code: "backend_conditions_ignored" });
        // Nothing of ours was left in the bucket (the probe removed its object).
        expect(await store.list(bucket, ".user-groups/")).toEqual([]);
      } finally {
        if (variable) process.env[variable] = value;
        await proxy.close();
      }
    });

    it("a connection cut mid-answer or reset (Toxiproxy) is backend_unreachable, retryable, with no credential or signed URL in it; healed, the read succeeds", async () => {
      const bucket = await freshBucket();
      const big = Buffer.from("x".repeat(256 * 1024));
      await store.put(bucket, "big.txt", big);
      const toxiproxy = await startToxiproxy();
      try {
        const port = await toxiproxy.proxy("store", `127.0.0.1:${store.port}`);
        const env = Object.fromEntries(Object.entries({ ...process.env, ...store.env }).map(([k, v]) => [k, v === undefined ? v : through(v, port)]));
        const client = clients[store.kind](through(store.backendUrl(bucket), port), env);
        // Through the proxy untouched: the whole object.
        expect((await client.get("big.txt"))?.body.length).toBe(big.length);
        const failure = async () => {
          const error = await client.get("big.txt").then(() => undefined, (e: unknown) => e);
          expect(error).toMatchObject({ code: "backend_unreachable" });
          expect(isRetryableError(error as { code: string })).toBe(true);
          const message = (error as Error).message;
          expect(message.split("\n")).toHaveLength(1);
          for (const [variable, value] of Object.entries(store.env)) if (/KEY|SECRET|TOKEN|ACCOUNTS/.test(variable)) expect(message).not.toContain(value);
          expect(message).not.toMatch(/signature|sig=|authorization|big\.txt/i);
          return message;
        };
        // The answer's head passes, its body is cut after 16 KiB (undici's read fails with a bare `terminated` over the socket's error).
        await toxiproxy.toxic("store", "limit_data", "downstream", { bytes: 16 * 1024 });
        expect(await failure()).toMatch(/\((terminated|UND_ERR_[A-Z_]+|ECONNRESET)\)/);
        await toxiproxy.heal("store");
        // Reset by the peer (TCP RST) as the answer starts.
        await toxiproxy.partition("store", "reset");
        await failure();
        await toxiproxy.heal("store");
        // Refused.
        await toxiproxy.partition("store", "refuse");
        await failure();
        await toxiproxy.heal("store");
        expect((await client.get("big.txt"))?.body.length).toBe(big.length);
      } finally {
        await toxiproxy.stop();
      }
    });

    it("the lease and the directory are objects of the bucket beside Pulumi's; the lease holds its epoch", async () => {
      const bucket = await freshBucket();
      const backend = backendFor(store.backendUrl(bucket))!;
      const lease = backend.leaseStore(PROJECT, "dev", { rules: leaseRules() });
      expect((await lease.tryAcquire(claim())).acquired).toBe(true);
      await backend.shardDirectory(PROJECT, "dev").claim(["default.g"], 1);
      const keys = await store.list(bucket, ".user-groups/");
      expect(keys).toEqual(expect.arrayContaining([`.user-groups/leases/${PROJECT}/dev/lease.json`, `.user-groups/shards/${PROJECT}/dev/directory.json`]));
      const stored = JSON.parse((await store.get(bucket, `.user-groups/leases/${PROJECT}/dev/lease.json`))!.toString("utf8")) as { epoch: number };
      expect(stored.epoch).toBe(1);
      await lease.close();
    });
  });

  return { store: () => store, freshBucket };
}
