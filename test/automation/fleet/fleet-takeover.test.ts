// CONTRACT F7 (issue 25 items 4-5): a replica SIGKILLed (its whole process group)
// in the middle of a run, and another replica taking over by itself: on PostgreSQL
// (the lease whose holder's session ended) and on a file backend (the lease file, same host).
// The trial itself: test/support/takeover-trial.ts (bench/takeover.ts measures it).
import { spawn } from "node:child_process";
import path from "node:path";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";
import { provisionUserGroups, type TakeoverReport } from "../../../provider/automation";
import { waitFor } from "../../support/wait-for";
import { describeTakeoverTrial, runTakeoverTrial } from "../../../testkit/takeover-trial";

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

const WORKER = path.join(__dirname, "../../../testkit/fleet-worker.cjs");

/**
 * What the takeover of A showed. On the record-first path (the fleet's default) A's creates are its own requests, each
 * recorded (proven) first: a kill while they are in flight leaves no Pulumi lock and no provider process, and the takeover
 * adopts the record's entries; a kill that lands in A's adopting run leaves its lock, pending creates and provider
 * processes as any engine run does. Either way every group A created or recorded is adopted, once.
 */
function expectTakenOver(result: Awaited<ReturnType<typeof runTakeoverTrial>>): void {
  expect(result.takeovers.length).toBeGreaterThanOrEqual(1);
  const removedLocks = result.takeovers.flatMap((t) => t.removedLocks);
  expect(removedLocks.length).toBeLessThanOrEqual(1);
  // Every create the dead run left pending, and every group it created first, was adopted by the waiting replica itself.
  const pendingCreates = result.takeovers.flatMap((t) => t.pending).filter((op) => op.type === "creating").length;
  expect(result.takeovers.flatMap((t) => t.adopted).length).toBeGreaterThanOrEqual(Math.max(pendingCreates, removedLocks.length === 0 ? result.createdAtKill : 0));
  if (removedLocks.length > 0) {
    // Killed in an engine run: its provider processes (a process group of their own, which the kill did not reach) exited by themselves.
    expect(result.orphans).toBeGreaterThan(0);
    expect(result.orphansGoneMs).toBeLessThan(15_000);
  } else expect(result.orphans).toBe(0);
}

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
    expectTakenOver(result);
  }, 300_000);

  describe("PostgreSQL backend", () => {
    let postgres: PostgresServer;
    beforeAll(async () => {
      postgres = await startPostgres();
    });
    afterAll(() => postgres?.stop());

    it("the killed replica's lease ends with its session; the other replica serves retried and new sign-ups", async () => {
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
      expectTakenOver(result);
    }, 300_000);

    it("a run of another host (a lost CI runner) is taken over by the CLI's path on a fresh one, proven by its run record", async () => {
      await server.reset();
      const stack = "runner";
      const ids = Array.from({ length: 6 }, (_, i) => `ci-${i}`);
      server.setFaults([{ method: "GET", action: "delay", delayMs: 1_500 }]);
      // The runner's run: its own process group, killed whole once two groups exist.
      const job = { stack, backendUrl: postgres.backendUrl, workDir: path.join(env.workDir, "runner-a"), ids, prefix: "Customer" };
      const runner = spawn(process.execPath, [WORKER], { env: { ...process.env, ...trialEnv(), FLEET_WORKER_JOB: JSON.stringify(job) }, detached: true, stdio: "ignore" });
      const exited = new Promise((resolve) => runner.on("exit", resolve));
      await waitFor(() => server.groups().length >= 2, { timeoutMs: 120_000, what: "the runner's first groups" });
      process.kill(-runner.pid!, "SIGKILL");
      await exited;
      server.clearFaults();
      // As if it had run on another host: its run record and its Pulumi lock name that host.
      let lockFound = 0;
      const db = new Client({ connectionString: postgres.backendUrl });
      await db.connect();
      try {
        await db.query(`UPDATE user_groups_run_records SET record = jsonb_set(record, '{host}', '"ci-runner-7"') WHERE stack_key = $1`, [`user-groups/${stack}`]);
        // Killed in its record-first sign-ups (the default) it holds no Pulumi lock; killed in an engine run, one.
        const locks = await db.query<{ key: string; data: { data: string } }>("SELECT key, data FROM pulumi_state WHERE key LIKE '%/.pulumi/locks/%'");
        expect(locks.rows.length).toBeLessThanOrEqual(1);
        lockFound = locks.rows.length;
        for (const row of locks.rows) {
          const content = { ...JSON.parse(Buffer.from(row.data.data, "base64").toString("utf8")), hostname: "ci-runner-7" };
          await db.query("UPDATE pulumi_state SET data = $2 WHERE key = $1", [row.key, JSON.stringify({ data: Buffer.from(JSON.stringify(content)).toString("base64") })]);
        }
      } finally {
        await db.end();
      }
      // The fresh runner: the whole groups file, as `user-groups up` runs it.
      const takeovers: TakeoverReport[] = [];
      const up = await provisionUserGroups({
        stack,
        backendUrl: postgres.backendUrl,
        workDir: path.join(env.workDir, "runner-b"),
        envVars: trialEnv(),
        groups: ids.map((id) => ({ name: `Customer ${id}`, userGroupId: id })),
        onTakeover: (report) => takeovers.push(report),
      });
      expect(takeovers).toHaveLength(1);
      expect(takeovers[0]!.removedLocks.map((lock) => lock.hostname)).toEqual(lockFound === 1 ? ["ci-runner-7"] : []);
      expect(takeovers[0]!.adopted.length).toBeGreaterThan(0);
      const onServer = new Map(server.groups().map((g) => [g.user_group_id, g.token]));
      expect([...onServer.keys()].sort()).toEqual([...ids].sort());
      expect(up.groups.map((g) => [g.userGroupId, g.token])).toEqual([...ids].sort().map((id) => [id, onServer.get(id)]));
    }, 300_000);
  });
});
