// Bounded outage (issue #32 items 1-2): on PostgreSQL, replica A (testkit/fleet-worker.cjs,
// its own OS process and process group) holds the stack in the middle of a run and is
// paused (SIGSTOP of its process group: a frozen VM, a long GC pause). Its lease expires
// by the database's clock; replica B (a UserGroupFleet in this process) takes the stack
// over and serves new sign-ups and A's retried ones within 45 s of A's last renewal (target 30 s, reported).
// Then A is resumed (SIGCONT): its calls in flight fail with a retryable error or
// finish consistently, nothing it sends after the fence reaches the service (A talks to
// the service through a recording proxy, so every request of A's run is seen), and
// nothing it writes reaches the state (its late checkpoint does not erase B's groups;
// the next `up` of everything finds no "already exists").
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";
import { provisionUserGroups, type TakeoverReport, UserGroupFleet } from "../../../provider/automation";
import { waitFor } from "../../support/wait-for";
import { commandLine, descendantsOf, isRunning } from "../../../testkit/kill-tree";
import { SERVE_AGAIN_BOUND_MS } from "../../jepsen/postgres-histories";

const KEY = "fleet-pause-key-00000001";
const WORKER = path.join(__dirname, "../../../testkit/fleet-worker.cjs");
/** The PostgreSQL lease's TTL and the provider's fence margin (lease/postgres-store.ts, client/run-fence). */
const TTL_MS = 10_000;
const MARGIN_MS = 3_000;

/** A forwarding proxy in front of the fake server that notes when each request arrives and for which group. */
async function recordingProxy(target: string): Promise<{ url: string; seen: { at: number; method: string; id: string }[]; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const seen: { at: number; method: string; id: string }[] = [];
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      let id = "";
      try {
        const parsed = JSON.parse(body.toString("utf8")) as { user_group_id?: string; data_source_provided_id?: string };
        id = parsed.user_group_id ?? parsed.data_source_provided_id ?? "";
      } catch {
        // not JSON
      }
      seen.push({ at, method: req.method ?? "", id });
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on("error", () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let server: FakeServer;
let env: PulumiTestEnv;
let postgres: PostgresServer;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("fleet-pause");
  postgres = await startPostgres();
});
afterAll(async () => {
  postgres?.stop();
  await server?.close();
  env?.cleanup();
});

describe.skipIf(process.platform !== "linux")("a replica paused mid-run (SIGSTOP) on PostgreSQL", () => {
  it("loses its lease by time; another serves within the serve-again bound (target 30 s) of its last renewal; resumed, it reaches neither the service nor the state", async () => {
    const stack = "paused";
    const engineEnv = { ...env.envVars, PULUMI_CONFIG_PASSPHRASE: "fleet-pause", USER_GROUPS_API_KEY: KEY };
    const proxy = await recordingProxy(server.url);
    const idsA = Array.from({ length: 6 }, (_, i) => `pause-a-${i}`);
    const newIds = ["pause-b-0", "pause-b-1"];
    server.setFaults([{ method: "GET", action: "delay", delayMs: 1_500 }]);
    const job = { stack, backendUrl: postgres.backendUrl, workDir: path.join(env.workDir, "pause-a"), ids: idsA, prefix: "Customer" };
    const replicaA = spawn(process.execPath, [WORKER], {
      env: { ...process.env, ...engineEnv, USER_GROUPS_BASE_URL: proxy.url, FLEET_WORKER_JOB: JSON.stringify(job) },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdoutA = "";
    let stderrA = "";
    replicaA.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdoutA += chunk));
    replicaA.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderrA += chunk));
    const exitedA = new Promise<void>((resolve) => replicaA.on("exit", () => resolve()));
    const takeovers: TakeoverReport[] = [];
    const steps: string[] = [];
    const fleet = new UserGroupFleet({
      stack,
      backendUrl: postgres.backendUrl,
      workDir: path.join(env.workDir, "pause-b"),
      envVars: { ...engineEnv, USER_GROUPS_BASE_URL: server.url },
      lockTimeoutMs: 120_000,
      onTakeover: (report) => {
        takeovers.push(report);
        steps.push(`takeover done at ${Date.now()}`);
      },
      onOutput: (text) => {
        for (const line of text.split("\n")) if (/^(Updating|Refreshing|Resources:|Duration:)/.test(line.trim())) steps.push(`${Date.now()} ${line.trim().slice(0, 60)}`);
      },
    });
    const db = new Client({ connectionString: postgres.backendUrl });
    await db.connect();
    try {
      // A is in the middle of its run: some of its creates answered, others in flight.
      await waitFor(() => server.groups().filter((g) => g.user_group_id.startsWith("pause-a-")).length >= 2, { timeoutMs: 180_000, what: "replica A's first groups" });
      process.kill(-replicaA.pid!, "SIGSTOP");
      const pausedAt = Date.now();
      // The slow service only served to catch A mid-run (A's requests in flight keep their delay).
      server.clearFaults();
      // Its last renewal, by the database's clock (a renewal under way when the signal landed is done within a second).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const lease = await db.query<{ renewed: string; expires: string; epoch: string }>(
        `SELECT (EXTRACT(EPOCH FROM expires_at) * 1000 - ${TTL_MS})::bigint::text AS renewed, (EXTRACT(EPOCH FROM expires_at) * 1000)::bigint::text AS expires, epoch::text FROM user_groups_run_leases`,
      );
      expect(lease.rows).toHaveLength(1);
      const lastRenewal = Number(lease.rows[0]!.renewed);
      const expiresAt = Number(lease.rows[0]!.expires);
      const epochA = Number(lease.rows[0]!.epoch);

      // B's callers: a new sign-up at once, then A's callers asking again, then more new ones.
      const served: { id: string; at: number; token?: string; error?: string }[] = [];
      const signUp = (id: string) =>
        fleet.ensure({ name: `Customer ${id}`, userGroupId: id }).then(
          (r) => void served.push({ id, at: Date.now(), ...(r.token !== undefined ? { token: r.token } : {}) }),
          (error: unknown) => void served.push({ id, at: Date.now(), error: String((error as Error)?.message ?? error) }),
        );
      // Which engine sessions run meanwhile: a run's engine names its epoch (what the fence on Pulumi's table checks).
      const engineSessions = new Set<string>();
      const watcher = new Client({ connectionString: postgres.backendUrl });
      await watcher.connect();
      const watching = setInterval(() => {
        void watcher
          .query<{ name: string }>("SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE application_name LIKE 'ug-run:%'")
          .then((r) => r.rows.forEach((row) => engineSessions.add(row.name)), () => undefined);
      }, 100);
      const calls = [signUp(newIds[0]!)];
      let acquiredAt = 0;
      await waitFor(
        async () => {
          if (acquiredAt === 0 && Number((await db.query<{ epoch: string }>("SELECT epoch::text FROM user_groups_run_leases")).rows[0]?.epoch) > epochA) acquiredAt = Date.now();
          return served.length > 0;
        },
        { timeoutMs: 120_000, intervalMs: 100, what: "B's first sign-up" },
      );
      const firstServed = served[0]!;
      expect(firstServed.error).toBeUndefined();
      const timeToServe = firstServed.at - lastRenewal;
      console.log(`fleet-pause: paused ${pausedAt - lastRenewal} ms after A's last renewal; B served a new sign-up ${timeToServe} ms after it (${firstServed.at - pausedAt} ms after the pause); B took the lease ${acquiredAt - lastRenewal} ms after A's last renewal`);
      console.log(`fleet-pause: B's steps (ms after A's last renewal): ${steps.map((step) => step.replace(/\d{13}/, (t) => String(Number(t) - lastRenewal))).join("; ")}`);
      // The target is 30 s (reported above); the bound held is the one the design guarantees with margin, as the histories hold it.
      expect(timeToServe).toBeLessThan(SERVE_AGAIN_BOUND_MS);
      calls.push(...idsA.map(signUp), signUp(newIds[1]!));
      await Promise.all(calls);
      clearInterval(watching);
      await watcher.end();
      server.clearFaults();
      for (const s of served) expect(s.error, s.id).toBeUndefined();
      expect(takeovers.length).toBeGreaterThanOrEqual(1);
      const leaseB = await db.query<{ epoch: string }>("SELECT epoch::text FROM user_groups_run_leases");
      expect(Number(leaseB.rows[0]!.epoch)).toBeGreaterThan(epochA);
      const epochsSeen = [...engineSessions].map((name) => Number(name.split(":")[2]));
      console.log(`fleet-pause: engine sessions seen during B's runs: ${[...engineSessions].join(", ")}`);
      expect(epochsSeen.length).toBeGreaterThan(0);
      expect(epochsSeen.some((epoch) => epoch > epochA)).toBe(true);

      // A resumes: whatever it had in flight fails retryably or finishes consistently.
      const resumedAt = Date.now();
      process.kill(-replicaA.pid!, "SIGCONT");
      const treeA = descendantsOf(replicaA.pid!);
      await Promise.race([
        exitedA,
        new Promise((_, reject) =>
          setTimeout(() => {
            const left = treeA.filter(isRunning).map((pid) => `${pid} ${commandLine(pid).slice(0, 150)}`);
            reject(new Error(`replica A did not end: ${stderrA.slice(0, 2000)}\nstill running: ${left.join("\n")}`));
          }, 60_000),
        ),
      ]);
      const reportA = JSON.parse(stdoutA.trim().split("\n").at(-1) ?? "{}") as { report?: { id: string; token?: string; error?: string; code?: string }[] };
      const onServer = new Map(server.groups().map((g) => [g.user_group_id, g.token]));
      console.log(`fleet-pause: A after resuming: ${JSON.stringify(reportA.report?.map((r) => ({ id: r.id, code: r.code ?? (r.error ? "?" : "ok") })))}`);
      // A answers every one of its calls (the worker reports each), so the checks below run once per call.
      expect(reportA.report?.map((r) => r.id)).toEqual(idsA);
      for (const r of reportA.report ?? []) {
        if (r.error !== undefined) expect(["run_lease_lost", "run_fenced"], `${r.id}: ${r.error.slice(0, 300)}`).toContain(r.code);
        else expect(r.token, r.id).toBe(onServer.get(r.id));
      }
      // A's engine, resumed, may have tried to write before it was stopped: the fence on Pulumi's table refused it.
      const refused = readFileSync(postgres.logFile, "utf8").split("\n").filter((line) => /ERROR: +run_fenced/.test(line));
      console.log(`fleet-pause: writes to Pulumi's table the fence refused: ${refused.length}${refused.length > 0 ? ` (${refused[0]!.slice(0, 200)})` : ""}`);
      // Nothing of A's run reached the service after the fence (its requests went through the proxy).
      const fencedFrom = expiresAt - MARGIN_MS;
      const late = proxy.seen.filter((s) => s.at >= fencedFrom);
      console.log(`fleet-pause: A sent ${proxy.seen.length} requests, ${late.length} after the fence; resumed ${resumedAt - expiresAt} ms after its lease expired`);
      expect(late).toEqual([]);

      // The state: B's groups survived A's resumption, the state and the service agree, nothing pending.
      const asked = [...idsA, ...newIds].sort();
      expect([...onServer.keys()].sort()).toEqual(asked);
      const held = await fleet.list();
      expect(held.map((g) => g.userGroupId).sort()).toEqual(asked);
      for (const g of held) expect(g.token, g.userGroupId).toBe(onServer.get(g.userGroupId));
      // The next `up` of everything: no "already exists", nothing created or deleted.
      await fleet.close();
      const up = await provisionUserGroups({
        stack,
        backendUrl: postgres.backendUrl,
        workDir: path.join(env.workDir, "pause-c"),
        envVars: { ...engineEnv, USER_GROUPS_BASE_URL: server.url },
        groups: asked.map((id) => ({ name: `Customer ${id}`, userGroupId: id })),
      });
      expect(up.summary).toMatchObject({ create: 0, delete: 0 });
      expect(up.groups.map((g) => [g.userGroupId, g.token])).toEqual(asked.map((id) => [id, onServer.get(id)]));
    } finally {
      server.clearFaults();
      if (replicaA.exitCode === null && replicaA.signalCode === null) {
        process.kill(-replicaA.pid!, "SIGCONT");
        process.kill(-replicaA.pid!, "SIGKILL");
      }
      await fleet.close().catch(() => undefined);
      await db.end();
      await proxy.close();
    }
  }, 400_000);
});
