// Issue 42 item 1, end to end: a UserGroupFleet whose stacks live in an object
// store (moto's S3, Azurite, fake-gcs-server, each started here on 127.0.0.1)
// ensures a group through the engine with the object store as its backend URL:
// the run lease and the shard directory are objects of the bucket beside
// Pulumi's checkpoint, the lease released with its epoch, the store's
// credentials never in what the engine printed. One `up` per store, the stores
// side by side.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupFleet } from "../../provider/automation";
import { type ObjectStore, startAzurite, startGcs, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "object-fleet-key-0001";
const STORES: ReadonlyArray<readonly [string, () => Promise<ObjectStore>]> = [
  ["S3 (moto)", startS3],
  ["Azure Blob (Azurite)", startAzurite],
  ["GCS (fake-gcs-server)", startGcs],
];

let server: FakeServer;
let env: PulumiTestEnv;
const stores = new Map<string, ObjectStore>();
beforeAll(async () => {
  env = createPulumiTestEnv("object-fleet");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  await Promise.all(STORES.map(async ([title, start]) => stores.set(title, await start())));
  // Our own stores in this process read the credentials from its environment, as the engine's do from its own.
  for (const store of stores.values()) Object.assign(process.env, store.env);
}, 600_000);
afterAll(async () => {
  await Promise.all([...stores.values()].map((store) => store.stop()));
  await server?.close();
  env?.cleanup();
});

describe.concurrent("a fleet on an object store", () => {
  for (const [title] of STORES) {
    it(`${title}: ensure runs under a lease kept in the bucket, beside Pulumi's checkpoint`, async () => {
      const store = stores.get(title)!;
      const bucket = `ug-fleet-${store.kind}`;
      await store.createBucket(bucket);
      const printed: string[] = [];
      const fleet = new UserGroupFleet({
        stack: "customers",
        backendUrl: store.backendUrl(bucket),
        workDir: `${env.workDir}/${store.kind}`,
        passphrase: "object-fleet",
        lockTimeoutMs: 20_000,
        envVars: { ...env.envVars, ...store.env, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
        onOutput: (text: string) => printed.push(text),
      });
      try {
        const id = `fleet-${store.kind}`;
        const made = await fleet.ensure({ name: `Fleet ${store.kind}`, userGroupId: id });
        expect(made.userGroupId).toBe(id);
        expect(server.groups().filter((g) => g.user_group_id === id)).toHaveLength(1);
      } finally {
        await fleet.close();
      }
      const keys = await store.list(bucket, "");
      expect(keys).toEqual(expect.arrayContaining([".user-groups/leases/user-groups/customers/lease.json"]));
      expect(keys.some((key) => key.startsWith(".pulumi/stacks/user-groups/customers"))).toBe(true);
      expect(keys.some((key) => key.startsWith(".pulumi/locks/"))).toBe(false);
      // Committed from the run's private copy with a conditional write (item 2): our mark is its last field.
      const checkpoint = (await store.get(bucket, ".pulumi/stacks/user-groups/customers.json"))!.toString("utf8");
      expect(checkpoint).toContain(`"userGroupId":"fleet-${store.kind}"`);
      expect(checkpoint).toMatch(/"userGroupsCommit":\{"epoch":\d+,"seq":\d+\}\}\n$/);
      const lease = JSON.parse((await store.get(bucket, ".user-groups/leases/user-groups/customers/lease.json"))!.toString("utf8")) as { epoch: number; record: { released: boolean } };
      expect(lease.epoch).toBeGreaterThanOrEqual(1);
      expect(lease.record.released).toBe(true);
      const output = printed.join("");
      for (const [name, value] of Object.entries(store.env)) if (/KEY|SECRET|TOKEN/.test(name)) expect(output).not.toContain(value);
    }, 180_000);
  }
});
