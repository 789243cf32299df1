// UserGroupFleet across OS processes on a real shared backend (PostgreSQL, Pulumi's
// diy postgres:// backend): three replicas ensure ten groups each, all at once, on
// one stack. Nothing may be lost, and every caller's token must be the service's.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { UserGroupFleet } from "../../../provider/automation";
import { type FleetWorkerReport, runFleetWorker } from "../../../testkit/fleet-worker-run";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "fleet-processes-key-0001";
const STACK = "customers";
let server: FakeServer;
let postgres: PostgresServer;
let env: PulumiTestEnv;

function runReplica(replica: string, ids: string[]): Promise<FleetWorkerReport> {
  return runFleetWorker(
    path.join(__dirname, "../../../testkit/fleet-worker.cjs"),
    { stack: STACK, backendUrl: postgres.backendUrl, workDir: path.join(env.workDir, replica), ids, prefix: replica },
    {
      ...process.env,
      ...env.envVars,
      PULUMI_CONFIG_PASSPHRASE: "fleet-processes",
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: KEY,
    },
    240_000,
  );
}

beforeAll(async () => {
  postgres = await startPostgres();
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("fleet-pg");
});
afterAll(async () => {
  await server?.close();
  postgres?.stop();
  env?.cleanup();
});

describe("UserGroupFleet across processes on PostgreSQL", () => {
  it("three processes ensuring ten groups each at once on one stack lose nothing", async () => {
    const replicas = ["r1", "r2", "r3"];
    const idsOf = (replica: string) => Array.from({ length: 10 }, (_, i) => `${replica}-customer-${i}`);
    const reports = await Promise.all(replicas.map((replica) => runReplica(replica, idsOf(replica))));

    // Every caller's own outcome first: a failure names its error.
    for (const [i, replica] of replicas.entries()) {
      expect(reports[i]!.report.map((r) => ({ id: r.id, change: r.change, error: r.error }))).toEqual(
        idsOf(replica).map((id) => ({ id, change: "create", error: undefined })),
      );
    }
    const stored = new Map(server.groups().map((g) => [g.user_group_id, g]));
    expect(stored.size).toBe(30);
    for (const [i, replica] of replicas.entries()) {
      const { report, engineRuns } = reports[i]!;
      // Ten concurrent calls of one process share runs (one, or a few when a lock wait splits them).
      expect(engineRuns).toBeLessThanOrEqual(3);
      for (const [j, id] of idsOf(replica).entries()) expect(report[j]!.token).toBe(stored.get(id)?.token);
    }
    // Nothing was deleted on the way.
    expect(server.journal().filter((r) => r.method === "DELETE")).toEqual([]);

    const fleet = new UserGroupFleet({
      stack: STACK,
      backendUrl: postgres.backendUrl,
      workDir: path.join(env.workDir, "checker"),
      passphrase: "fleet-processes",
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    });
    try {
      const held = await fleet.list();
      expect(held).toHaveLength(30);
      expect(held.map((g) => g.token).sort()).toEqual([...stored.values()].map((g) => g.token).sort());

      expect(await fleet.remove("r2-customer-4")).toMatchObject({ change: "delete" });
      expect(await fleet.list()).toHaveLength(29);
      expect(server.groups()).toHaveLength(29);
      expect(server.groups().some((g) => g.user_group_id === "r2-customer-4")).toBe(false);
    } finally {
      await fleet.close();
    }
  });
});
