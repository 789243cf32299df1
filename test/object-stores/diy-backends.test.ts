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

describe.skipIf(process.platform !== "linux").each(STORES)("%s", (title, start) => {
  let store: ObjectStore;
  const bucket = `ug-${title.split(" ")[0]!.toLowerCase()}-state`;

  beforeAll(async () => {
    store = await start();
    await store.createBucket(bucket);
  }, 300_000);
  afterAll(async () => {
    await store?.stop();
  });

  it("takes its credentials from the environment only: none is on its command line", () => {
    const secrets = Object.entries(store.env)
      .filter(([name]) => /KEY|SECRET|TOKEN/.test(name))
      .map(([, value]) => value);
    expect(secrets.length).toBeGreaterThan(0);
    for (const pid of [store.pid, ...descendantsOf(store.pid)]) {
      const line = cmdline(pid);
      for (const secret of secrets) expect(line).not.toContain(secret);
    }
  });

  it("serves Pulumi's DIY backend: an up of a UserGroup stack, its state stored in the bucket", async () => {
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

  it("offers create-if-absent: of 16 concurrent writers of one key, exactly one wins, and its bytes are stored (5 rounds)", async () => {
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
});
