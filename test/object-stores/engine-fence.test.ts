// Issue 42 items 2 and 3 on S3 (moto's server), Azure Blob (Azurite) and GCS
// (fake-gcs-server), each started here on 127.0.0.1: the
// engine of a run on an object store works on a private copy of the stack and
// its checkpoint is committed with conditional writes (docs/object-stores.md,
// "Fencing").
// - On S3: a fleet ensure and the whole-set operations work; the checkpoint lands in the
//   bucket (committed, marked), with the run's history; the engine never takes
//   Pulumi's lock in the bucket (no lock object ever appears there while runs go
//   on: item 3); no private copy is left behind.
// - On each store, the attack: holder A takes the lease (its copy made) and stops (paused past its
//   lease); B takes over, its engine creates a group and commits; A wakes and its
//   engine's checkpoint (written in its copy, as Pulumi writes) is committed late:
//   refused, `run_fenced`, from its provider's fence and from its release alike;
//   B's checkpoint intact in the bucket.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { provisionUserGroups, refreshUserGroups, UserGroupFleet } from "../../provider/automation";
import { leaseStoreFor } from "../../provider/automation/lease";
import { adapterFor, OBJECT_FENCE_ENV } from "../../provider/backends";
import { OBJECT_COPY_ENV } from "../../provider/backends/object-engine-copy";
import { type ObjectStore, startAzurite, startGcs, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "object-fence-key-0001";
const PROJECT = "user-groups";

let server: FakeServer;
let env: PulumiTestEnv;
let s3: ObjectStore;
let azurite: ObjectStore;
let gcs: ObjectStore;
// This file's own temporary directory: the private copies are made under os.tmpdir(), and other files' runs
// (their own copies, in parallel) must not be counted as this one's leftovers.
const outerTmp = process.env.TMPDIR;
const ownTmp = mkdtempSync(path.join(tmpdir(), "object-fence-tmp-"));
process.env.TMPDIR = ownTmp;
beforeAll(async () => {
  env = createPulumiTestEnv("object-fence");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  [s3, azurite, gcs] = await Promise.all([startS3(), startAzurite(), startGcs()]);
  // Our own stores in this process read the credentials from its environment, as the engine's do from its own.
  for (const store of [s3, azurite, gcs]) Object.assign(process.env, store.env);
}, 600_000);
afterAll(async () => {
  await Promise.all([s3, azurite, gcs].map((store) => store?.stop()));
  await server?.close();
  env?.cleanup();
  if (outerTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = outerTmp;
  rmSync(ownTmp, { recursive: true, force: true });
});

const copies = () => readdirSync(tmpdir()).filter((name) => name.startsWith("user-groups-copy-"));
const checkpointOf = async (bucket: string, stack: string, store = s3) => (await store.get(bucket, `.pulumi/stacks/${PROJECT}/${stack}.json`))?.toString("utf8") ?? "";
const runOptions = (bucket: string, stack: string, store = s3) => ({
  stack,
  backendUrl: store.backendUrl(bucket),
  workDir: `${env.workDir}/${bucket}-${stack}`,
  passphrase: "object-fence",
  lockTimeoutMs: 60_000,
  envVars: { ...env.envVars, ...store.env, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
});

it("S3 (moto): fleet and whole-set runs work on a private copy, committed to the bucket; Pulumi's lock never taken there", async () => {
  const bucket = "ug-fence-runs";
  await s3.createBucket(bucket);
  const before = new Set(copies());
  // The stacks made first: creating a stack (`pulumi stack init`, before any lease) takes Pulumi's lock in the bucket once.
  const fleet = new UserGroupFleet(runOptions(bucket, "signups"));
  const whole = runOptions(bucket, "wholeset");
  const locksSeen: string[] = [];
  let watching = true;
  let watcher: Promise<void> = Promise.resolve();
  try {
    expect((await fleet.ensure({ name: "Fence A", userGroupId: "fence-a" })).userGroupId).toBe("fence-a");
    const made = await provisionUserGroups({ ...whole, groups: [{ name: "Whole One", userGroupId: "whole-one" }, { name: "Whole Two", userGroupId: "whole-two" }] });
    expect(made.groups.map((g) => g.userGroupId).sort()).toEqual(["whole-one", "whole-two"]);
    // Item 3: from here on, runs on these stacks; the bucket's lock folder watched the whole time.
    watcher = (async () => {
      while (watching) {
        locksSeen.push(...(await s3.list(bucket, ".pulumi/locks/")));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const [b, c] = await Promise.all([fleet.ensure({ name: "Fence B", userGroupId: "fence-b" }), fleet.ensure({ name: "Fence C", userGroupId: "fence-c" })]);
    expect([b.userGroupId, c.userGroupId]).toEqual(["fence-b", "fence-c"]);
    await refreshUserGroups(whole);
    const again = await provisionUserGroups({ ...whole, groups: [{ name: "Whole One", userGroupId: "whole-one" }], maxDeletes: 1 });
    expect(again.summary.delete).toBe(1);
  } finally {
    watching = false;
    await watcher;
    await fleet.close();
  }

  for (const [stack, held, gone] of [
    ["signups", ["fence-a", "fence-b", "fence-c"], []],
    ["wholeset", ["whole-one"], ["whole-two"]],
  ] as const) {
    const checkpoint = await checkpointOf(bucket, stack);
    // Committed by us (marked), Pulumi's own format otherwise: the engine reads it back (the runs above did).
    expect(checkpoint).toMatch(/"userGroupsCommit":\{"epoch":\d+,"seq":\d+\}\}\n$/);
    for (const id of held) expect(checkpoint).toContain(`"userGroupId":"${id}"`);
    for (const id of gone) expect(checkpoint).not.toContain(`"userGroupId":"${id}"`);
    // Pulumi's history of the runs, committed beside it.
    expect((await s3.list(bucket, `.pulumi/history/${PROJECT}/${stack}/`)).length).toBeGreaterThan(0);
  }
  expect(server.groups().map((g) => g.user_group_id).filter((id) => id.startsWith("whole-"))).toEqual(["whole-one"]);
  expect(locksSeen).toEqual([]);
  // Every private copy removed once its run let go.
  expect(copies().filter((name) => !before.has(name))).toEqual([]);
}, 300_000);

for (const [title, storeOf] of [
  ["S3 (moto)", () => s3],
  ["Azure Blob (Azurite)", () => azurite],
  ["GCS (fake-gcs-server)", () => gcs],
] as const) {
  it(`${title}: a taken-over holder's late commit is refused (run_fenced) and the new holder's checkpoint is intact`, async () => {
    const store = storeOf();
    const bucket = `ug-fence-attack-${store.kind}`;
    await store.createBucket(bucket);
    const stack = "attacked";
    const url = store.backendUrl(bucket);
    // The stack, with one group, by a run of ours.
    const first = new UserGroupFleet(runOptions(bucket, stack, store));
    await first.ensure({ name: "Before", userGroupId: `attack-before-${store.kind}` }).finally(() => first.close());

    // A takes the lease (its copy made: the first act) with a short lease, then stops renewing: a paused holder.
    const a = leaseStoreFor(url, PROJECT, stack, { waiterId: "holder-a", timing: { ttlMs: 2_000, renewEveryMs: 500 } })!;
    const taken = await a.tryAcquire({ runId: "run-a", host: "host-a", pid: 1, startedAt: Date.now(), renewedAt: Date.now() });
    expect(taken.acquired).toBe(true);
    const record = taken.acquired ? taken.record : undefined;
    const aEnv = a.fenceEnv!(record!)!;
    const aCopy = aEnv[OBJECT_COPY_ENV]!;
    // The copy is private: 0700, our files in it 0600; the engine's backend is the copy, not the bucket.
    expect(statSync(aCopy).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(aCopy, "commit.json")).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(aCopy, "backend", ".pulumi", "stacks", PROJECT, `${stack}.json`)).mode & 0o777).toBe(0o600);
    expect(aEnv.PULUMI_BACKEND_URL).toBe(`file://${path.join(aCopy, "backend")}`);
    // A's engine (paused mid-run) has written its checkpoint into its copy: the group it had, and one more.
    const aCheckpoint = path.join(aCopy, "backend", ".pulumi", "stacks", PROJECT, `${stack}.json`);
    writeFileSync(aCheckpoint, readFileSync(aCheckpoint, "utf8").replace(/"userGroupsCommit":\{[^}]*\}/, '"planted":"by-stale-holder-a"'));

    // B (a fleet of ours) takes over once A's lease expired, and creates a group.
    const b = new UserGroupFleet(runOptions(bucket, stack, store));
    try {
      expect((await b.ensure({ name: "After", userGroupId: `attack-after-${store.kind}` })).userGroupId).toBe(`attack-after-${store.kind}`);
    } finally {
      await b.close();
    }
    const afterB = await checkpointOf(bucket, stack, store);
    expect(afterB).toContain(`"userGroupId":"attack-after-${store.kind}"`);

    const copyText = readFileSync(path.join(aCopy, "commit.json"), "utf8") + readFileSync(aCheckpoint, "utf8") + JSON.stringify(aEnv);
    // A wakes: its provider's fence (committing before a request) and its release both refuse its commit.
    const fence = adapterFor(url)!.runFenceFromEnv!({ ...process.env, ...aEnv, [OBJECT_FENCE_ENV.url]: url })!;
    const refusals = [await fence.check().catch((error: unknown) => error), await a.release(record!).catch((error: unknown) => error)] as Array<{ code?: string; message?: string; stack?: string }>;
    for (const refusal of refusals) expect(refusal).toMatchObject({ code: "run_fenced" });
    // The store's credentials are in neither refusal, nor in the copy's files (nor its environment: only a path).
    const secrets = Object.entries(store.env).filter(([name]) => /KEY|SECRET|TOKEN/.test(name)).map(([, value]) => value);
    for (const secret of secrets) {
      for (const refusal of refusals) expect(`${refusal.message}\n${refusal.stack}`).not.toContain(secret);
      expect(copyText).not.toContain(secret);
    }
    await a.close();
    // B's checkpoint is what the bucket holds, nothing of A's in it; A's copy is gone.
    const final = await checkpointOf(bucket, stack, store);
    expect(final).toBe(afterB);
    expect(final).not.toContain("by-stale-holder-a");
    expect(copies()).not.toContain(path.basename(aCopy));
    expect(server.groups().filter((g) => g.user_group_id.endsWith(`-${store.kind}`) && g.user_group_id.startsWith("attack-")).map((g) => g.user_group_id).sort()).toEqual([`attack-after-${store.kind}`, `attack-before-${store.kind}`]);
  }, 300_000);
}
