// `up` of many groups against the fake server's rate limit (W11): how close to
// the allowed rate the provider runs, with zero failures.
// Shared by test/reliability/rate-limit.test.ts (a short window) and
// bench/rate-limit.ts (`npm run bench:rate-limit`, the real limit).
// The whole run goes through the Automation API (engine + dynamic provider),
// so the figure includes everything a real `pulumi up` pays.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { destroyUserGroups, provisionUserGroups } from "../provider/automation/index.js";
import { startFakeServer } from "../fake-server/index.js";
import { RATE_BUDGET_ENV } from "../provider/client/rate-budget/index.js";

export interface RateLimitRun {
  readonly requests: number;
  readonly windowSeconds: number;
  readonly groups: number;
  /** A directory inside this package (the dynamic provider resolves the package from there). */
  readonly workRoot: string;
  /** Destroy the groups afterwards (not measured; takes as long again under the limit). */
  readonly destroy?: boolean;
}

export interface RateLimitResult {
  readonly groups: number;
  readonly created: number;
  /** Requests the server answered other than 429, and 429s. */
  readonly admitted: number;
  readonly limited: number;
  /** From the first request to the last answer, seconds. */
  readonly seconds: number;
  /** Admitted requests per second, and that as a fraction of the allowed rate. */
  readonly rate: number;
  readonly fractionOfAllowed: number;
  readonly upSeconds: number;
}

const KEY = "bench-rate-limit-key-0001";

export async function measureRateLimitedUp(run: RateLimitRun): Promise<RateLimitResult> {
  mkdirSync(run.workRoot, { recursive: true });
  const dir = mkdtempSync(path.join(run.workRoot, "rate-limit-"));
  const server = await startFakeServer({
    apiKeys: [{ key: KEY, environment: "Customer" }],
    rateLimit: { requests: run.requests, windowSeconds: run.windowSeconds },
    journalSize: 1_000_000,
  });
  const options = {
    stack: "bench",
    workDir: dir,
    passphrase: "bench-passphrase",
    // The provider's budget at the server's limit (the test suite turns it off elsewhere).
    envVars: {
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: KEY,
      PULUMI_HOME: path.join(dir, ".pulumi-home"),
      [RATE_BUDGET_ENV.limit]: `${run.requests}/${run.windowSeconds}`,
    },
  };
  try {
    const groups = Array.from({ length: run.groups }, (_, i) => ({ name: `Bench ${i}`, userGroupId: `bench-${i}`, mapping: { s: "dw" } }));
    const started = Date.now();
    const result = await provisionUserGroups({ ...options, groups });
    const upSeconds = (Date.now() - started) / 1000;
    const journal = server.journal();
    const first = Date.parse(journal[0]!.time);
    const lastEntry = journal.at(-1)!;
    const seconds = (Date.parse(lastEntry.time) + lastEntry.durationMs - first) / 1000;
    const admitted = journal.filter((e) => e.status !== 429).length;
    const limited = journal.length - admitted;
    const rate = admitted / seconds;
    const measured: RateLimitResult = {
      groups: server.groups().length,
      created: result.summary.create,
      admitted,
      limited,
      seconds,
      rate,
      fractionOfAllowed: rate / (run.requests / run.windowSeconds),
      upSeconds,
    };
    if (run.destroy === true) await destroyUserGroups(options);
    return measured;
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
