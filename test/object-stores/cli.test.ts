// Issue 42 item 1 for the `user-groups` CLI: a bucket as its backend
// (PULUMI_BACKEND_URL=s3://…, azblob://…, gs://…: moto's server, Azurite and
// fake-gcs-server started here), end to end on each: up, preview, destroy (one
// of each per store) under the run lease in the bucket, the engine on a private
// copy committed with the store's conditional write (our commit mark on the
// checkpoint: fenced like the fleet), no Pulumi lock left. Then the refusals,
// one coded line each under --json, before Pulumi is asked: a bucket that does
// not exist, wrong credentials (on Azurite: moto checks no signature), a store
// that ignores its conditions (a proxy that strips them).
// The store's credentials are in the environment only; none is in anything the
// CLI printed, in an error, or in what it left in the bucket.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { conditionStripper, type ObjectStore, startAzurite, startGcs, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "object-cli-key-000000000001";
let server: FakeServer;
let s3: ObjectStore;
let azure: ObjectStore;
let gcs: ObjectStore;
let env: PulumiTestEnv;
let groupsFile: string;
beforeAll(async () => {
  env = createPulumiTestEnv("object-cli");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  [s3, azure, gcs] = await Promise.all([startS3(), startAzurite(), startGcs()]);
  groupsFile = path.join(env.workDir, "groups.yaml");
  writeFileSync(groupsFile, "groups:\n  - { name: Acme, userGroupId: cli-acme }\n  - { name: Initech, userGroupId: cli-initech }\n");
}, 600_000);
afterAll(async () => {
  await s3?.stop();
  await azure?.stop();
  await gcs?.stop();
  await server?.close();
  env?.cleanup();
});

/** The started store a backend URL names, by its scheme. */
const storeOf = (backendUrl: string): ObjectStore => (backendUrl.startsWith("azblob:") ? azure : backendUrl.startsWith("gs:") ? gcs : s3);

function cli(backendUrl: string, extraEnv: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...env.envVars, ...storeOf(backendUrl).env, PULUMI_BACKEND_URL: backendUrl, PULUMI_CONFIG_PASSPHRASE: "object-cli", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, ...extraEnv },
  });
}

/** The store's secrets (and the wrong one a test tries) are in nothing the CLI printed. */
function noSecretIn(run: CliRun, ...more: string[]): void {
  const secrets = [...Object.entries({ ...s3.env, ...azure.env, ...gcs.env }).filter(([name]) => /KEY|SECRET|TOKEN/.test(name)).map(([, value]) => value), ...more];
  for (const secret of secrets) {
    expect(run.stdout).not.toContain(secret);
    expect(run.stderr).not.toContain(secret);
  }
}

/** A refusal under --json: exit 1, one JSON document with this code, the same one line on stderr. */
function refused(run: CliRun, code: string): string {
  expect(run.code, run.stderr).toBe(1);
  const document = JSON.parse(run.stdout) as { error: { code: string; message: string } };
  expect(document.error.code, document.error.message).toBe(code);
  expect(run.stderr).toBe(`user-groups: ${document.error.message}\n`);
  expect(document.error.message.split("\n")).toHaveLength(1);
  return document.error.message;
}

const STORES = [
  ["S3 (moto)", () => s3],
  ["Azure Blob (Azurite)", () => azure],
  ["GCS (fake-gcs-server)", () => gcs],
] as const;

describe.skipIf(process.platform !== "linux")("the user-groups CLI on a bucket", () => {
  it.each(STORES)("%s: up, preview, destroy: under the lease in the bucket, the checkpoint committed conditionally, no lock left, no credential printed", async (_title, storeNow) => {
    const store = storeNow();
    const bucket = `cli-state-${store.kind}`;
    await store.createBucket(bucket);
    const url = store.backendUrl(bucket);

    const up = await cli(url, {}, "up", "--file", groupsFile, "--stack", "prod", "--yes", "--json");
    expect(up.code, up.stderr).toBe(0);
    noSecretIn(up);
    expect(server.groups().map((g) => g.user_group_id).sort()).toEqual(["cli-acme", "cli-initech"]);
    const keys = await store.list(bucket, "");
    expect(keys).toEqual(expect.arrayContaining([".user-groups/leases/user-groups/prod/lease.json", ".pulumi/stacks/user-groups/prod.json"]));
    expect(keys.filter((key) => key.startsWith(".pulumi/locks/"))).toEqual([]);
    // Committed from the run's private copy with the store's conditional write: our mark is its last field.
    const checkpoint = (await store.get(bucket, ".pulumi/stacks/user-groups/prod.json"))!.toString("utf8");
    expect(checkpoint).toContain('"userGroupId":"cli-acme"');
    expect(checkpoint).toMatch(/"userGroupsCommit":\{"epoch":\d+,"seq":\d+\}\}\n$/);
    const lease = JSON.parse((await store.get(bucket, ".user-groups/leases/user-groups/prod/lease.json"))!.toString("utf8")) as { epoch: number; record: { released: boolean } };
    expect(lease.record.released).toBe(true);
    const firstEpoch = lease.epoch;

    const preview = await cli(url, {}, "preview", "--file", groupsFile, "--stack", "prod", "--expect-no-changes", "--json");
    expect(preview.code, preview.stderr).toBe(0);
    noSecretIn(preview);

    const destroy = await cli(url, {}, "destroy", "--stack", "prod", "--yes", "--json");
    expect(destroy.code, destroy.stderr).toBe(0);
    noSecretIn(destroy);
    expect(server.groups().filter((g) => g.user_group_id.startsWith("cli-"))).toEqual([]);
    const after = JSON.parse((await store.get(bucket, ".user-groups/leases/user-groups/prod/lease.json"))!.toString("utf8")) as { epoch: number; record: { released: boolean } };
    expect(after.epoch).toBeGreaterThan(firstEpoch);
    expect(after.record.released).toBe(true);
    expect((await store.list(bucket, ".pulumi/locks/")).length).toBe(0);
    // Nothing the CLI left in the bucket holds the store's credentials.
    for (const key of await store.list(bucket, "")) {
      const body = (await store.get(bucket, key))!.toString("utf8");
      for (const [name, value] of Object.entries(store.env)) if (/KEY|SECRET/.test(name)) expect(body, key).not.toContain(value);
    }
  }, 300_000);

  it("a bucket that does not exist: backend_bucket_missing, naming it, nothing sent", async () => {
    const before = server.groups().length;
    const run = await cli(s3.backendUrl("no-such-bucket"), {}, "up", "--file", groupsFile, "--stack", "prod", "--yes", "--json");
    expect(refused(run, "backend_bucket_missing")).toContain("no-such-bucket");
    noSecretIn(run);
    expect(server.groups().length).toBe(before);
  }, 120_000);

  it("wrong credentials (Azure Blob, Azurite): backend_credentials_rejected, neither key shown, nothing sent", async () => {
    const container = "cli-wrong-key";
    await azure.createBucket(container);
    const wrong = Buffer.alloc(32, 7).toString("base64");
    const before = server.groups().length;
    const run = await cli(azure.backendUrl(container), { AZURE_STORAGE_KEY: wrong }, "up", "--file", groupsFile, "--stack", "prod", "--yes", "--json");
    refused(run, "backend_credentials_rejected");
    noSecretIn(run, wrong);
    expect(server.groups().length).toBe(before);
  }, 120_000);

  it("a store that ignores its conditions: backend_conditions_ignored, refused before any lease, nothing sent", async () => {
    const bucket = "cli-no-conditions";
    await s3.createBucket(bucket);
    const proxy = await conditionStripper(s3.port);
    try {
      const before = server.groups().length;
      const run = await cli(s3.backendUrl(bucket).replace(`127.0.0.1:${s3.port}`, `127.0.0.1:${proxy.port}`), {}, "up", "--file", groupsFile, "--stack", "prod", "--yes", "--json");
      refused(run, "backend_conditions_ignored");
      noSecretIn(run);
      expect(server.groups().length).toBe(before);
      expect(await s3.list(bucket, ".user-groups/leases/")).toEqual([]);
    } finally {
      await proxy.close();
    }
  }, 120_000);
});
