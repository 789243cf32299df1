// Issue 42 item 3 on S3 (moto's server, started here on 127.0.0.1): Pulumi's own
// lock under our lease. A lock a dead replica of ours left (its lease expired
// unreleased, the lock taken while it held it) is cleared by the next run under
// the lease, which then serves; a lock of a run we do not own (no lease of ours
// ever held it, another host) is left alone and the run waits and fails with
// `stack_lock*`, nothing sent to the service.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupFleet } from "../../provider/automation";
import { type ObjectStore, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "object-locks-key-0001";

let server: FakeServer;
let env: PulumiTestEnv;
let s3: ObjectStore;
beforeAll(async () => {
  env = createPulumiTestEnv("object-locks");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  s3 = await startS3();
  // Our own stores in this process read the credentials from its environment, as the engine's do from its own.
  Object.assign(process.env, s3.env);
}, 600_000);
afterAll(async () => {
  await s3?.stop();
  await server?.close();
  env?.cleanup();
});

it("S3 (moto): a lock a dead replica of ours left is cleared under the lease; one we do not own is left alone", async () => {
  const store = s3;
  const bucket = "ug-fleet-locks";
  await store.createBucket(bucket);
  const fleetOn = (stack: string, lockTimeoutMs: number) =>
    new UserGroupFleet({
      stack,
      backendUrl: store.backendUrl(bucket),
      workDir: `${env.workDir}/locks-${stack}`,
      passphrase: "object-fleet",
      lockTimeoutMs,
      envVars: { ...env.envVars, ...store.env, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    });
  const first = fleetOn("ours", 20_000);
  await first.ensure({ name: "First", userGroupId: "locks-first" }).finally(() => first.close());

  const now = Date.now();
  // Then a replica of ours died mid-run: its lease expired unreleased (epoch 2), its Pulumi lock taken while it held it.
  const dead = { runId: "dead-replica", host: hostname(), pid: 4_194_305, startedAt: now - 60_000, renewedAt: now - 30_000, epoch: 2 };
  const record = { version: 1, ...dead, expiresAt: now - 10_000, released: false, unfinished: [], adopt: [] };
  const put = (key: string, value: unknown) => store.put(bucket, key, Buffer.from(JSON.stringify(value)));
  await put(".user-groups/leases/user-groups/ours/lease.json", { epoch: 2, expiresAt: 0, record });
  const ourLock = `.pulumi/locks/organization/user-groups/ours/${randomUUID()}.json`;
  await put(ourLock, { pid: dead.pid, username: "fleet", hostname: dead.host, timestamp: new Date(now - 45_000).toISOString() });
  // Someone else's run on another stack (no lease of ours ever held it), on another host.
  const theirLock = `.pulumi/locks/organization/user-groups/theirs/${randomUUID()}.json`;
  await put(theirLock, { pid: 77, username: "someone", hostname: "their-laptop", timestamp: new Date(now - 5_000).toISOString() });

  const ours = fleetOn("ours", 20_000);
  try {
    expect((await ours.ensure({ name: "Ours", userGroupId: "locks-ours" })).userGroupId).toBe("locks-ours");
  } finally {
    await ours.close();
  }
  const keys = await store.list(bucket, ".pulumi/locks/");
  expect(keys).not.toContain(ourLock);
  const lease = JSON.parse((await store.get(bucket, ".user-groups/leases/user-groups/ours/lease.json"))!.toString("utf8")) as { epoch: number };
  expect(lease.epoch).toBeGreaterThan(2);

  const theirs = fleetOn("theirs", 1_500);
  try {
    await expect(theirs.ensure({ name: "Theirs", userGroupId: "locks-theirs" })).rejects.toMatchObject({ code: expect.stringMatching(/^stack_lock/) });
  } finally {
    await theirs.close();
  }
  expect(await store.list(bucket, ".pulumi/locks/")).toEqual([theirLock]);
  expect(server.groups().some((g) => g.user_group_id === "locks-theirs")).toBe(false);
}, 180_000);
