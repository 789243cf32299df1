// examples/onboarding-service: two replicas (OS processes) of the service on one
// PostgreSQL backend, customers signing up through either one, interleaved.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ListeningProcess, watchServer } from "../support/listening-process";
import { startPostgres, type PostgresServer } from "../../testkit/postgres";
import { waitFor } from "../support/wait-for";
import { useStackFixture } from "../support/stack-fixture";

const BEARER = "onboarding-bearer-secret-0001";
const { server, env, envVars } = useStackFixture({ label: "onboarding", apiKeys: ["onboarding-customer-key-0001"] });
let postgres: PostgresServer;
const replicas: { url: string }[] = [];
/** Every replica process spawned, listening or not, for afterAll to stop. */
const started: ListeningProcess[] = [];

async function startReplica(name: string): Promise<{ url: string; process: ListeningProcess }> {
  const replica = watchServer(
    spawn(process.execPath, [path.join(__dirname, "../support/onboarding-replica.cjs")], {
      env: {
        ...process.env,
        ...envVars({ PULUMI_BACKEND_URL: postgres.backendUrl, ONBOARDING_WORK_DIR: path.join(env.workDir, name), ONBOARDING_TOKEN: BEARER }),
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  started.push(replica);
  const url = await replica.listening.catch((error: Error) => {
    throw new Error(`replica ${name}: ${error.message}`);
  });
  return { url, process: replica };
}

async function signUp(url: string, body: unknown, bearer: string | null = BEARER) {
  const response = await fetch(`${url}/customers`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  postgres = await startPostgres();
  replicas.push(...(await Promise.all([startReplica("replica-a"), startReplica("replica-b")])));
});
afterAll(async () => {
  await Promise.all(
    started.map((replica) => {
      replica.child.kill("SIGTERM");
      return replica.exited;
    }),
  );
  postgres?.stop();
});

describe("onboarding service, two replicas on one PostgreSQL backend", () => {
  it("provisions every customer of interleaved sign-ups, each answered with its own token", async () => {
    const customers = Array.from({ length: 8 }, (_, i) => ({ id: `customer-${i}`, name: `Customer ${i}`, plan: i % 2 ? "team" : "trial" }));
    // Even customers through replica A, odd ones through B, all at once.
    const answers = await Promise.all(customers.map((customer, i) => signUp(replicas[i % 2]!.url, customer)));
    const stored = new Map(server.groups().map((g) => [g.user_group_id, g]));
    expect(stored.size).toBe(customers.length);
    for (const [i, customer] of customers.entries()) {
      expect(answers[i]!.status, JSON.stringify(answers[i]!.json)).toBe(201);
      expect(answers[i]!.json).toMatchObject({ userGroupId: customer.id, change: "create" });
      expect(answers[i]!.json.token).toBe(stored.get(customer.id)?.token);
      expect(stored.get(customer.id)).toMatchObject({ name: customer.name, properties: { plan: customer.plan } });
    }
    expect(server.journal().filter((r) => r.method === "DELETE")).toEqual([]);
  });

  it("answers a repeated sign-up, on either replica, with the same token and no request to the service", async () => {
    const before = server.groups().find((g) => g.user_group_id === "customer-3")?.token;
    const mark = server.journal().length;
    for (const replica of replicas) {
      const again = await signUp(replica.url, { id: "customer-3", name: "Customer 3", plan: "team" });
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ change: "same", token: before });
    }
    expect(server.journal().slice(mark)).toEqual([]);
  });

  it("hands no token to a caller without the bearer secret, and refuses malformed sign-ups", async () => {
    const mark = server.journal().length;
    const url = replicas[0]!.url;
    expect((await signUp(url, { id: "customer-3", name: "Customer 3" }, null)).status).toBe(401);
    const wrong = await signUp(url, { id: "customer-3", name: "Customer 3" }, "not-the-onboarding-secret");
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(wrong.json)).not.toMatch(/[0-9a-f]{64}/);
    expect((await signUp(url, { id: "no spaces allowed", name: "X" })).status).toBe(400);
    expect((await signUp(url, { id: "ok" })).status).toBe(400);
    expect(server.journal().slice(mark)).toEqual([]);
  });

  it("stops on SIGTERM: the sign-up in flight finishes with its token, a new one gets 503, then exit 0", async () => {
    const replica = await startReplica("replica-stopping");
    // Slow on the service, so that the sign-up is still in flight when the signal comes.
    server.setFaults([{ method: "GET", action: "delay", delayMs: 3_000, user_group_id: "customer-late" }]);
    try {
      const inFlight = signUp(replica.url, { id: "customer-late", name: "Customer Late" });
      await waitFor(() => replica.process.stdout().includes("sign-up customer-late: provisioning"), { timeoutMs: 30_000, what: "the sign-up to be taken" });
      replica.process.child.kill("SIGTERM");
      await waitFor(() => replica.process.stdout().includes("stopping:"), { timeoutMs: 30_000, what: "the replica to begin stopping" });
      const refused = await signUp(replica.url, { id: "customer-after", name: "Customer After" });
      expect(refused.status).toBe(503);
      const answered = await inFlight;
      expect(answered.status, JSON.stringify(answered.json)).toBe(201);
      expect(answered.json.token).toBe(server.groups().find((g) => g.user_group_id === "customer-late")?.token);
      expect(await replica.process.exited).toBe(0);
      expect(server.groups().some((g) => g.user_group_id === "customer-after")).toBe(false);
    } finally {
      server.clearFaults();
    }
  }, 120_000);
});
