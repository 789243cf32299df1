// The object stores issue 42 puts the fleet on, as real servers the project's
// own scripts start (testkit/object-stores/: moto's S3 server, Azurite,
// fake-gcs-server): Pulumi's DIY backend works against each (an `up` of a small
// UserGroup stack, its state found in the store afterwards), and each offers
// the primitive the adapters will build leases and fencing on: a create-if-absent
// write that exactly one of many concurrent writers wins. Credentials reach the
// servers and Pulumi through the environment only, never a command line.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { descendantsOf } from "../../testkit/kill-tree";
import { type ObjectStore, startAzurite, startGcs, startS3 } from "../../testkit/object-stores";
import { createUserGroupStack, loadPackage } from "../support/user-group-stack";

const KEY = "object-stores-key-0001";
const STORES: ReadonlyArray<readonly [string, () => Promise<ObjectStore>]> = [
  ["S3 (moto)", startS3],
  ["Azure Blob (Azurite)", startAzurite],
  ["GCS (fake-gcs-server)", startGcs],
];

let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
});
afterAll(async () => {
  await server?.close();
});

const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {
    return "";
  }
};

// The stores side by side: started together, and every test of the file at once (each store its own server, bucket
// and stack), so that the file takes about as long as its slowest store.
const stores = new Map<string, { store: ObjectStore; bucket: string }>();
beforeAll(async () => {
  await Promise.all(
    STORES.map(async ([title, start]) => {
      const store = await start();
      stores.set(title, { store, bucket: `ug-${store.kind}-state` });
      await store.createBucket(`ug-${store.kind}-state`);
    }),
  );
  // `npm test`'s pretest builds the servers; a first run of this file alone on a cold machine builds them here (minutes).
}, 1_500_000);
afterAll(async () => {
  await Promise.all([...stores.values()].map(({ store }) => store.stop()));
});
const the = (title: string) => {
  const found = stores.get(title);
  if (!found) throw new Error(`${title} did not start`);
  return found;
};

// Linux only: the command lines are read from /proc.
(process.platform === "linux" ? describe.concurrent : describe.skip)("object stores", () => {
  for (const [title] of STORES) {
    it(`${title}: takes its credentials from the environment only: none is on its command line`, () => {
      const { store } = the(title);
      const secrets = Object.entries(store.env)
        .filter(([name]) => /KEY|SECRET|TOKEN/.test(name))
        .map(([, value]) => value);
      expect(secrets.length).toBeGreaterThan(0);
      for (const pid of [store.pid, ...descendantsOf(store.pid)]) {
        const line = cmdline(pid);
        expect(line).not.toBe("");
        for (const secret of secrets) expect(line).not.toContain(secret);
      }
    });

    it(`${title}: serves Pulumi's DIY backend: an up of a UserGroup stack, its state stored in the bucket`, async () => {
      const { store, bucket } = the(title);
      const label = `store-${store.kind}`;
      const id = `${store.kind}-acme`;
      const { UserGroup } = loadPackage();
      const handle = await createUserGroupStack(
        label,
        async () => {
          const group = new UserGroup("acme", { name: "Acme", userGroupId: id });
          return { token: group.token };
        },
        { "user-groups:baseUrl": { value: server.url }, "user-groups:apiKey": { value: KEY, secret: true } },
        { PULUMI_BACKEND_URL: store.backendUrl(bucket), ...store.env },
      );
      try {
        const up = await handle.stack.up({ onOutput: handle.onOutput });
        expect(up.summary.result).toBe("succeeded");
        expect(up.summary.resourceChanges).toMatchObject({ create: 2 });
        const onService = server.groups().find((g) => g.user_group_id === id);
        expect(onService).toBeDefined();

        // The checkpoint is in the store, where Pulumi's DIY layout puts it, and holds the group (its token encrypted).
        const keys = await store.list(bucket, ".pulumi/stacks/");
        const checkpoint = keys.find((k) => k === `.pulumi/stacks/user-groups-${label}/test.json`);
        expect(checkpoint, `stored keys: ${keys.join(", ")}`).toBeDefined();
        const state = (await store.get(bucket, checkpoint!))!.toString("utf8");
        const resources = (JSON.parse(state) as { checkpoint: { latest: { resources: Array<{ urn: string; outputs?: Record<string, unknown> }> } } }).checkpoint.latest.resources;
        expect(resources.find((r) => r.urn.endsWith("::acme"))?.outputs).toMatchObject({ userGroupId: id });
        expect(state).not.toContain(onService!.token);
        // Nothing of the store's credentials in what the engine printed.
        const printed = handle.output.join("\n");
        for (const [name, value] of Object.entries(store.env)) if (/KEY|SECRET|TOKEN/.test(name)) expect(printed).not.toContain(value);
      } finally {
        await handle.cleanup();
      }
    }, 180_000);

    it(`${title}: offers create-if-absent: of 16 concurrent writers of one key, exactly one wins, and its bytes are stored (5 rounds)`, async () => {
      const { store, bucket } = the(title);
      for (let round = 0; round < 5; round++) {
        const key = `leases/round-${round}.json`;
        const bodies = Array.from({ length: 16 }, (_, writer) => Buffer.from(JSON.stringify({ writer, round })));
        const outcomes = await Promise.all(bodies.map((body) => store.putIfAbsent(bucket, key, body)));
        const winners = outcomes.flatMap((outcome, writer) => (outcome === "created" ? [writer] : []));
        expect(winners, `round ${round}: ${outcomes.join(", ")}`).toHaveLength(1);
        expect((await store.get(bucket, key))?.toString()).toBe(bodies[winners[0]!]!.toString());
        // And a writer that comes after the race loses too.
        expect(await store.putIfAbsent(bucket, key, Buffer.from("late"))).toBe("exists");
      }
      // The condition is what refused them: a plain write over the same key is taken (as the engine's own writes are).
      await store.put(bucket, "leases/round-0.json", Buffer.from("plain"));
      expect((await store.get(bucket, "leases/round-0.json"))?.toString()).toBe("plain");
    }, 60_000);
  }
});
