// CONTRACT F7 (issue 25 items 4-5): a replica SIGKILLed (its whole process group)
// in the middle of a run, and another replica taking over by itself: on PostgreSQL
// (the advisory-lock lease) and on a file backend (the lease file, same host).
// The trial itself: test/support/takeover-trial.ts (bench/takeover.ts measures it).
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { startPostgres, type PostgresServer } from "../support/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { describeTakeoverTrial, runTakeoverTrial } from "../support/takeover-trial";

const KEY = "fleet-takeover-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("fleet-takeover");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

function trialEnv(): Record<string, string> {
  return {
    ...env.envVars,
    PULUMI_CONFIG_PASSPHRASE: "fleet-takeover",
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: KEY,
  };
}

const WORKER = path.join(__dirname, "../support/fleet-worker.cjs");

describe.skipIf(process.platform !== "linux")("a replica killed mid-run is taken over by another", () => {
  it("file backend, same host: the dead pid frees the lease at once; every sign-up is served once, with the server's token", async () => {
    await server.reset();
    const result = await runTakeoverTrial({
      server,
      backendUrl: `file://${env.backendDir}`,
      workRoot: env.workDir,
      stack: "signups-file",
      worker: WORKER,
      env: trialEnv(),
      ids: Array.from({ length: 6 }, (_, i) => `file-a-${i}`),
      newIds: ["file-b-0", "file-b-1"],
      killAt: 2,
      delayMs: 1_500,
      label: "file",
    });
    console.log(`fleet-takeover file: ${describeTakeoverTrial(result)}`);
    expect(result.problems).toEqual([]);
    // The dead run's lock was removed and its pending creates adopted, by the waiting replica itself.
    expect(result.takeovers.length).toBeGreaterThanOrEqual(1);
    expect(result.takeovers.flatMap((t) => t.removedLocks)).toHaveLength(1);
    expect(result.takeovers.flatMap((t) => t.adopted).length).toBeGreaterThan(0);
    // Its provider processes (a process group of their own, which the kill did not reach) exited by themselves.
    expect(result.orphans).toBeGreaterThan(0);
    expect(result.orphansGoneMs).toBeLessThan(30_000);
  }, 300_000);

  describe("PostgreSQL backend", () => {
    let postgres: PostgresServer;
    beforeAll(async () => {
      postgres = await startPostgres();
    });
    afterAll(() => postgres?.stop());

    it("the advisory lock dies with the killed replica's connection; the other replica serves retried and new sign-ups", async () => {
      await server.reset();
      const result = await runTakeoverTrial({
        server,
        backendUrl: postgres.backendUrl,
        workRoot: env.workDir,
        stack: "signups",
        worker: WORKER,
        env: trialEnv(),
        ids: Array.from({ length: 8 }, (_, i) => `pg-a-${i}`),
        newIds: ["pg-b-0", "pg-b-1", "pg-b-2"],
        killAt: 3,
        delayMs: 1_500,
        label: "pg",
      });
      console.log(`fleet-takeover pg: ${describeTakeoverTrial(result)}`);
      expect(result.problems).toEqual([]);
      expect(result.takeovers.flatMap((t) => t.removedLocks)).toHaveLength(1);
      expect(result.takeovers.flatMap((t) => t.adopted).length).toBeGreaterThan(0);
      expect(result.orphans).toBeGreaterThan(0);
      expect(result.orphansGoneMs).toBeLessThan(30_000);
    }, 300_000);
  });
});
