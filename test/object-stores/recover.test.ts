// Issue 42, `user-groups recover` on a bucket (S3, moto's server started here):
// a CLI `up` killed mid-request (its whole process group: the CLI, the engine,
// its provider) leaves its lease in the bucket and a pending create in the
// checkpoint (the provider commits before each request); the service did
// receive that create. While the dead holder's lease has not expired, `recover`
// is refused (`stack_locked`, nothing changed); `recover --break-lease` (a
// person says the holder is gone) takes the lease over at once, adopts the
// group the service made (once, not created again), clears the pending create
// and leaves no Pulumi lock; the lease's epoch moved on. No credential in what
// the CLI printed. The killed up is the stack's second (Acme made first): a
// first up of new groups only runs with no checkpoint per step (its intents in
// the run record instead: engine/intents.ts), so it would leave no pending create.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { type ObjectStore, startS3 } from "../../testkit/object-stores";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { runUserGroupsCli, USER_GROUPS_CLI } from "../support/user-groups-cli";

const KEY = "object-recover-key-000001";
const LEASE = ".user-groups/leases/user-groups/prod/lease.json";
const CHECKPOINT = ".pulumi/stacks/user-groups/prod.json";
let server: FakeServer;
let s3: ObjectStore;
let env: PulumiTestEnv;
let groupsFile: string;
beforeAll(async () => {
  env = createPulumiTestEnv("object-recover");
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  s3 = await startS3();
  groupsFile = path.join(env.workDir, "groups.yaml");
  writeFileSync(groupsFile, "groups:\n  - { name: Acme, userGroupId: rec-acme }\n");
}, 600_000);
afterAll(async () => {
  await s3?.stop();
  await server?.close();
  env?.cleanup();
});

const cliEnv = (url: string): NodeJS.ProcessEnv => ({
  ...process.env,
  ...env.envVars,
  ...s3.env,
  PULUMI_BACKEND_URL: url,
  PULUMI_CONFIG_PASSPHRASE: "object-recover",
  USER_GROUPS_BASE_URL: server.url,
  USER_GROUPS_API_KEY: KEY,
  // The default lease (20 s): the dead holder's is still live when recover first asks.
  USER_GROUPS_OBJECT_LEASE_TTL_MS: "20000",
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const json = async (bucket: string, key: string) => {
  const body = await s3.get(bucket, key);
  return body === undefined ? undefined : (JSON.parse(body.toString("utf8")) as Record<string, unknown>);
};

describe.skipIf(process.platform !== "linux")("user-groups recover on a bucket (S3, moto)", () => {
  it("a replica killed mid-request: refused while its lease lives; --break-lease takes over, adopts the group the service made, clears the pending create", async () => {
    const bucket = "cli-recover";
    await s3.createBucket(bucket);
    const url = s3.backendUrl(bucket);
    // Acme first, to the end: the stack then holds a group, and the next up keeps a checkpoint per step.
    const first = await runUserGroupsCli(["up", "--file", groupsFile, "--stack", "prod", "--yes", "--json"], { cwd: env.workDir, env: cliEnv(url) });
    expect(first.code, first.stderr).toBe(0);
    writeFileSync(groupsFile, "groups:\n  - { name: Acme, userGroupId: rec-acme }\n  - { name: Initech, userGroupId: rec-initech }\n");
    // The create of rec-initech reaches the service and is held there: the run is killed meanwhile; the service makes it after.
    server.addFaults([{ method: "GET", user_group_id: "rec-initech", action: "delay", delayMs: 5_000, times: 1 }]);
    const child = spawn(process.execPath, [USER_GROUPS_CLI, "up", "--file", groupsFile, "--stack", "prod", "--yes", "--json"], {
      cwd: env.workDir,
      env: cliEnv(url),
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    try {
      // The provider commits before it sends: the pending create is in the bucket, then the request is sent.
      await until(
        "the pending create of rec-initech in the bucket",
        async () => {
          const text = (await s3.get(bucket, CHECKPOINT).catch(() => undefined))?.toString("utf8") ?? "";
          const pending = /"pending_operations":\s*\[(.*)\]/s.exec(text)?.[1] ?? "";
          return pending.includes('"creating"') && pending.includes("rec-initech") ? true : undefined;
        },
        60_000,
      ).catch(async (error: unknown) => {
        const text = (await s3.get(bucket, CHECKPOINT).catch(() => undefined))?.toString("utf8") ?? "";
        throw new Error(`${(error as Error).message}; exit ${child.exitCode}; the up's stderr: ${stderr.slice(-2000)}; groups ${JSON.stringify(server.groups().map((g) => g.user_group_id))}; checkpoint ${text.slice(0, 3000)}`);
      });
      // Sent meanwhile (the service holds it for 5 s): the run dies while it waits for the answer.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      // The whole process group this test started: the CLI, its engine, its provider.
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    }
    await exited;
    // The service received the create: it makes the group once its delay is over.
    await until("the service to make rec-initech", async () => (server.groups().some((g) => g.user_group_id === "rec-initech") ? true : undefined), 20_000);
    const dead = (await json(bucket, LEASE)) as { epoch: number; record: { released: boolean } };
    expect(dead.record.released, JSON.stringify(dead)).toBe(false);

    // The dead holder's lease has not expired: recover waits for no one, and changes nothing.
    const early = await runUserGroupsCli(["recover", "--file", groupsFile, "--stack", "prod", "--yes", "--json"], { cwd: env.workDir, env: cliEnv(url) });
    expect(early.code, early.stderr).not.toBe(0);
    expect((JSON.parse(early.stdout) as { error: { code: string } }).error.code).toBe("stack_locked");
    expect(((await json(bucket, LEASE)) as { epoch: number }).epoch).toBe(dead.epoch);

    // A person says the holder is gone: the lease is taken at once, what the service made adopted.
    const recovered = await runUserGroupsCli(["recover", "--break-lease", "--file", groupsFile, "--stack", "prod", "--yes", "--json"], { cwd: env.workDir, env: cliEnv(url) });
    expect(recovered.code, recovered.stderr).toBe(0);
    for (const secret of Object.entries(s3.env).filter(([name]) => /KEY|SECRET|TOKEN/.test(name)).map(([, value]) => value)) {
      expect(recovered.stdout + recovered.stderr + early.stdout + early.stderr).not.toContain(secret);
    }
    // Said on stderr (stdout is the up's JSON result): the pending create adopted, not made again.
    expect(recovered.stderr).toMatch(/adopted the groups whose create was pending: [^\n]*default\.rec-initech/);
    // Nothing lost, doubled or orphaned: each group once on the service, each in the state, no pending create left.
    expect(server.groups().map((g) => g.user_group_id).sort()).toEqual(["rec-acme", "rec-initech"]);
    const checkpoint = (await s3.get(bucket, CHECKPOINT))!.toString("utf8");
    const latest = (JSON.parse(checkpoint) as { checkpoint: { latest: { pending_operations?: unknown[]; resources: Array<{ inputs?: { userGroupId?: string } }> } } }).checkpoint.latest;
    expect(latest.pending_operations ?? []).toEqual([]);
    expect(latest.resources.map((r) => r.inputs?.userGroupId).filter(Boolean).sort()).toEqual(["rec-acme", "rec-initech"]);
    expect(checkpoint).toMatch(/"userGroupsCommit":\{"epoch":\d+,"seq":\d+\}\}\n$/);
    const after = (await json(bucket, LEASE)) as { epoch: number; record: { released: boolean } };
    expect(after.epoch).toBeGreaterThan(dead.epoch);
    expect(after.record.released).toBe(true);
    expect(await s3.list(bucket, ".pulumi/locks/")).toEqual([]);
  }, 300_000);
});
