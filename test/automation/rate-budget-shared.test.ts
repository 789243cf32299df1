// Issue 24 item 3, end to end: two stacks on one PostgreSQL backend (its password
// in the URL, as a user gives it), run at once through provisionUserGroups with
// the same key. Their provider processes book from one budget in the backend
// (automation/rate-budget-env.ts -> client/rate-budget-stores.ts), so together
// they stay within the fake server's limit; the table holds no key and no password.
import { mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provisionUserGroups } from "../../provider/automation";
import { budgetIdOf } from "../../provider/client/rate-budget/budget";
import { type PostgresServer, startPostgres } from "../../testkit/postgres";
import { useStackFixture } from "../support/stack-fixture";

const KEY = "shared-budget-e2e-key-5f1c2a9b7d";
const PASSWORD = "budget-Pw-8c1e";

const { server, env } = useStackFixture({
  label: "rate-budget-shared",
  apiKeys: [KEY],
  // 10 requests per 6 s: one process alone at that rate, twice over, would meet many 429s.
  server: { rateLimit: { requests: 10, windowSeconds: 6 }, journalSize: 10_000 },
});
let postgres: PostgresServer;

beforeAll(async () => {
  postgres = await startPostgres({ password: PASSWORD });
});
afterAll(async () => {
  postgres?.stop();
});

describe("one rate budget for two stacks on a PostgreSQL backend", () => {
  it("their provider processes share the key's budget: within the limit, few 429s, no key or password in the table", async () => {
    const backendUrl = postgres.backendUrl.replace("postgres://postgres@", `postgres://postgres:${PASSWORD}@`);
    const workDir = mkdtempSync(path.join(env.workDir, "shared-"));
    const { PULUMI_BACKEND_URL: _unused, ...envVars } = env.envVars;
    const run = (stack: string) =>
      provisionUserGroups({
        stack,
        workDir,
        backendUrl,
        envVars: { ...envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, USER_GROUPS_RATE_LIMIT: "10/6" },
        groups: Array.from({ length: 8 }, (_, i) => ({ name: `${stack} ${i}`, userGroupId: `${stack}-${i}`, mapping: {} })),
      });
    try {
      const results = await Promise.all([run("shard-a"), run("shard-b")]);
      expect(results.map((r) => r.summary.create)).toEqual([8, 8]);
      const journal = server.journal();
      const limited = journal.filter((entry) => entry.status === 429).length;
      console.log(`rate-budget-shared: ${journal.length} requests, ${limited} answered 429`);
      expect(journal.filter((entry) => entry.status !== 200 && entry.status !== 429)).toEqual([]);
      expect(limited).toBeLessThanOrEqual(2);
      expect(server.groups()).toHaveLength(16);

      const { Client } = await import("pg");
      const client = new Client({ host: "127.0.0.1", port: postgres.port, user: "postgres", database: "postgres", password: PASSWORD });
      await client.connect();
      try {
        const rows = (await client.query("SELECT budget_id, next_free::text AS next_free FROM user_groups_rate_budget")).rows as Array<Record<string, string>>;
        // One row, the key's budget: both stacks booked there.
        expect(rows.map((row) => row.budget_id)).toEqual([budgetIdOf(server.url, KEY)]);
        expect(JSON.stringify(rows)).not.toContain(KEY);
        expect(JSON.stringify(rows)).not.toContain(PASSWORD);
      } finally {
        await client.end();
      }
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  }, 150_000);
});
