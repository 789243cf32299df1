// Issue 42 item 6 beyond the CLI: the backend pre-check (BackendAdapter.check)
// sits in every run's stack selection (automation/engine/open-stack.ts), so a
// UserGroupFleet and the library's whole-set operations get the same one coded
// error as the CLI, before Pulumi is asked (which says a missing bucket as a
// lock, `stack_locked`, or as an engine error): a bucket that does not exist
// (S3, moto), wrong credentials (Azurite: moto checks no signature), a store
// that ignores its conditions (a proxy in front of moto that strips them).
// Each refusal: nothing sent to the service, no credential in the error, no
// lease taken in the bucket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { provisionUserGroups, UserGroupFleet } from "../../provider/automation";
import { conditionStripper, type ObjectStore, startAzurite, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";

const KEY = "object-precheck-key-00001";
let server: FakeServer;
let s3: ObjectStore;
let azure: ObjectStore;
let env: PulumiTestEnv;
beforeAll(async () => {
  env = createPulumiTestEnv("object-precheck");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  [s3, azure] = await Promise.all([startS3(), startAzurite()]);
  // Our own stores in this process read the credentials from its environment, as the engine's do from its own.
  Object.assign(process.env, s3.env, azure.env);
}, 600_000);
afterAll(async () => {
  await s3?.stop();
  await azure?.stop();
  await server?.close();
  env?.cleanup();
});

const settings = (backendUrl: string, store: ObjectStore, label: string) => ({
  stack: "prod",
  backendUrl,
  workDir: `${env.workDir}/${label}`,
  passphrase: "object-precheck",
  envVars: { ...env.envVars, ...store.env, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
});

/** What a fleet's ensure and a whole-set provision throw on this backend: both the same coded error, one line, no secret; nothing sent. */
async function refusals(backendUrl: string, store: ObjectStore, label: string, code: string, ...secrets: string[]): Promise<string[]> {
  const sent = server.journal().length;
  const fleet = new UserGroupFleet({ ...settings(backendUrl, store, `${label}-fleet`), lockTimeoutMs: 5_000 });
  let fromFleet: unknown;
  try {
    await fleet.ensure({ name: "Precheck", userGroupId: `precheck-${label}` }).catch((error: unknown) => (fromFleet = error));
  } finally {
    await fleet.close();
  }
  const fromProvision = await provisionUserGroups({ ...settings(backendUrl, store, `${label}-provision`), groups: [{ name: "Precheck", userGroupId: `precheck-${label}` }] }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const messages: string[] = [];
  for (const [who, error] of [
    ["fleet", fromFleet],
    ["provision", fromProvision],
  ] as const) {
    expect(error, `${who}: refused`).toBeInstanceOf(Error);
    expect((error as { code?: string }).code, `${who}: ${(error as Error).message}`).toBe(code);
    const message = (error as Error).message;
    expect(message.split("\n"), who).toHaveLength(1);
    const values = [...Object.entries({ ...s3.env, ...azure.env }).filter(([name]) => /KEY|SECRET|TOKEN/.test(name)).map(([, value]) => value), ...secrets];
    for (const secret of values) expect(`${message} ${JSON.stringify(error)}`, who).not.toContain(secret);
    messages.push(message);
  }
  expect(server.journal().slice(sent)).toEqual([]);
  return messages;
}

describe.skipIf(process.platform !== "linux")("the backend pre-check for a fleet and the library's whole-set runs", () => {
  it("a bucket that does not exist (S3): backend_bucket_missing from both, naming it, nothing sent", async () => {
    for (const message of await refusals(s3.backendUrl("no-such-precheck-bucket"), s3, "missing", "backend_bucket_missing")) expect(message).toContain("no-such-precheck-bucket");
  }, 180_000);

  it("wrong credentials (Azure Blob, Azurite): backend_credentials_rejected from both, neither key shown, nothing sent", async () => {
    const container = "precheck-wrong-key";
    await azure.createBucket(container);
    const right = process.env["AZURE_STORAGE_KEY"];
    const wrong = Buffer.alloc(32, 9).toString("base64");
    // Our stores read this process's environment, the engine the run's: both hold the wrong key.
    process.env["AZURE_STORAGE_KEY"] = wrong;
    const wrongStore = { ...azure, env: { ...azure.env, AZURE_STORAGE_KEY: wrong } };
    try {
      await refusals(azure.backendUrl(container), wrongStore, "wrong-key", "backend_credentials_rejected", wrong);
    } finally {
      process.env["AZURE_STORAGE_KEY"] = right;
    }
    expect(await azure.list(container, "")).toEqual([]);
  }, 180_000);

  it("a store that ignores its conditions: backend_conditions_ignored from both, no lease taken, nothing sent", async () => {
    const bucket = "precheck-no-conditions";
    await s3.createBucket(bucket);
    const proxy = await conditionStripper(s3.port);
    try {
      await refusals(s3.backendUrl(bucket).replace(`127.0.0.1:${s3.port}`, `127.0.0.1:${proxy.port}`), s3, "no-conditions", "backend_conditions_ignored");
      expect(await s3.list(bucket, "")).toEqual([]);
    } finally {
      await proxy.close();
    }
  }, 180_000);
});
