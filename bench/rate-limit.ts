// Two measurements against the fake server's rate limit (W11):
//
// - `up` of many groups in one stack: how close to the allowed rate the provider
//   runs, with zero failures (test/support/rate-limited-up.ts).
//     npm run bench:rate-limit                  (BENCH_RATE=180/60 BENCH_GROUPS=300 by default)
// - one rate budget (issue #24 item 3): N groups at R requests per minute split
//   over K stacks run at once through provisionUserGroups, every stack with the
//   same key on one file backend, so their provider processes share the key's
//   budget: wall time, its ratio to N/R minutes, requests sent, 429s.
//     npm run bench:rate-limit -- --shared [--quick] [--n 10000] [--rate 180] [--stacks 4] [--skip-checkpoints] [--unshared | --no-budget] [--out DIR]
//   The comparisons: --unshared, each provider process with a budget of its own; --no-budget, no
//   budget at all (USER_GROUPS_RATE_LIMIT=off: only the 429 reaction, as before the budget).
//   Full: N=10,000, R=180, K=4 (about an hour), written to docs/bench/rate-budget.{json,md}.
//   Quick: N=500, R=400, K=4 (about 80 s of pacing), written to .work/bench-quick/.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { provisionUserGroups } from "../provider/automation/index.js";
import { RATE_SAFETY, RATE_BUDGET_ENV } from "../provider/client/rate-budget/index.js";
import { startFakeServer } from "../fake-server/index.js";
import { measureRateLimitedUp } from "../testkit/rate-limited-up.js";

const REPO_ROOT = path.resolve(__dirname, "../..");

export interface SharedBudgetRun {
  /** Groups in all, split evenly over the stacks. */
  readonly groups: number;
  /** The key's allowance, requests per minute (the emulator's limit and the provider's budget). */
  readonly ratePerMinute: number;
  readonly stacks: number;
  /** PULUMI_SKIP_CHECKPOINTS for the stacks (the engine's own cost at thousands of groups per stack). */
  readonly skipCheckpoints: boolean;
  /** The comparisons: each provider process with a budget of its own (every one assumes the whole allowance), or none at all. */
  readonly budget?: BudgetMode;
  readonly workRoot: string;
}

export interface SharedBudgetResult {
  readonly groups: number;
  readonly ratePerMinute: number;
  readonly stacks: number;
  readonly skipCheckpoints: boolean;
  readonly budget: BudgetMode;
  readonly created: number;
  /** From the start of the runs to the end of the last. */
  readonly wallSeconds: number;
  /** N / R minutes: the least time the allowance permits for N creates. */
  readonly idealSeconds: number;
  readonly ratioToIdeal: number;
  /** Every request the server saw, 429s included (a create is one request; each provider process reads its key's environment once more). */
  readonly requests: number;
  readonly limited: number;
  /** Other failures the server answered (should be 0). */
  readonly failed: number;
  /** From the first request to the last answer, and the admitted requests per minute in it. */
  readonly requestSeconds: number;
  readonly admittedPerMinute: number;
  readonly budgetPerMinute: number;
  readonly startedAt: string;
  readonly machine: { readonly cpus: number; readonly loadAverage: readonly number[] };
}

const KEY = "bench-shared-budget-key-0001";

/** shared: the key's one budget in the backend; per-process: a budget per provider process; off: none (the 429 reaction alone). */
export type BudgetMode = "shared" | "per-process" | "off";

const BUDGET_WORDS: Record<BudgetMode, (stacks: number) => string> = {
  shared: (stacks) => `shared by the ${stacks} stacks' provider processes through their file backend's ledger.`,
  "per-process": (stacks) => `NOT shared (the comparison): each of the ${stacks} stacks' provider processes assumes the whole allowance.`,
  off: () => "turned off (the comparison, USER_GROUPS_RATE_LIMIT=off): only the 429 reaction paces the requests.",
};

export async function measureSharedBudget(run: SharedBudgetRun): Promise<SharedBudgetResult> {
  mkdirSync(run.workRoot, { recursive: true });
  const dir = mkdtempSync(path.join(run.workRoot, "rate-budget-"));
  const server = await startFakeServer({
    apiKeys: [{ key: KEY, environment: "Customer" }],
    rateLimit: { requests: run.ratePerMinute, windowSeconds: 60 },
    journalSize: Math.max(100_000, run.groups * 4),
  });
  const envVars: Record<string, string> = {
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: KEY,
    PULUMI_HOME: path.join(dir, ".pulumi-home"),
    [RATE_BUDGET_ENV.limit]: run.budget === "off" ? "off" : `${run.ratePerMinute}/60`,
    ...(run.skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: "true" } : {}),
    // Empty: no shared store, each process paces alone.
    ...(run.budget === "per-process" ? { [RATE_BUDGET_ENV.store]: "" } : {}),
  };
  try {
    const startedAt = new Date().toISOString();
    const started = Date.now();
    // Every stack in one work directory: one file backend, so one ledger of the key's budget.
    const results = await Promise.all(
      Array.from({ length: run.stacks }, (_, stack) => {
        const groups = [];
        for (let i = stack; i < run.groups; i += run.stacks) groups.push({ name: `Shared ${i}`, userGroupId: `shared-${i}`, mapping: { s: "dw" } });
        return provisionUserGroups({ stack: `shard-${stack}`, workDir: dir, passphrase: "bench-passphrase", envVars, groups });
      }),
    );
    const wallSeconds = (Date.now() - started) / 1000;
    const journal = server.journal();
    const first = Date.parse(journal[0]!.time);
    const last = journal.at(-1)!;
    const requestSeconds = (Date.parse(last.time) + last.durationMs - first) / 1000;
    const limited = journal.filter((e) => e.status === 429).length;
    const failed = journal.filter((e) => e.status !== 200 && e.status !== 429).length;
    const idealSeconds = (run.groups / run.ratePerMinute) * 60;
    return {
      groups: run.groups,
      ratePerMinute: run.ratePerMinute,
      stacks: run.stacks,
      skipCheckpoints: run.skipCheckpoints,
      budget: run.budget ?? "shared",
      created: results.reduce((sum, r) => sum + r.summary.create, 0),
      wallSeconds,
      idealSeconds,
      ratioToIdeal: wallSeconds / idealSeconds,
      requests: journal.length,
      limited,
      failed,
      requestSeconds,
      admittedPerMinute: ((journal.length - limited) / requestSeconds) * 60,
      budgetPerMinute: run.ratePerMinute * RATE_SAFETY,
      startedAt,
      machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    };
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function sharedBudgetMarkdown(result: SharedBudgetResult): string {
  const minutes = (seconds: number) => `${(seconds / 60).toFixed(1)} min`;
  return [
    "# One rate budget: N creates at R requests per minute over K stacks sharing one key",
    "",
    `Measured ${result.startedAt} (\`npm run bench:rate-limit -- --shared\`), ${result.machine.cpus} cores, load average at the end ${result.machine.loadAverage.join(", ")}.`,
    `The fake server limits the key to ${result.ratePerMinute} requests per 60 s (fixed windows, 429s counted too); the provider's budget`,
    `is ${result.ratePerMinute}/60 less ${Math.round((1 - RATE_SAFETY) * 100)}% (${result.budgetPerMinute.toFixed(1)} per minute),`,
    `${BUDGET_WORDS[result.budget](result.stacks)}${result.skipCheckpoints ? " The stacks ran with PULUMI_SKIP_CHECKPOINTS=true (the engine's own cost of rewriting thousands of groups' state after every step would otherwise compete for the CPU)." : ""}`,
    "",
    "| groups | stacks | rate (per min) | created | wall time | N / R | ratio | requests sent | 429s | other failures | admitted per min |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    `| ${result.groups} | ${result.stacks} | ${result.ratePerMinute} | ${result.created} | ${minutes(result.wallSeconds)} (${result.wallSeconds.toFixed(0)} s) | ${minutes(result.idealSeconds)} | ${result.ratioToIdeal.toFixed(3)} | ${result.requests} | ${result.limited} | ${result.failed} | ${result.admittedPerMinute.toFixed(1)} |`,
    "",
  ].join("\n");
}

function argValue(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

async function shared(args: readonly string[]): Promise<void> {
  const quick = args.includes("--quick");
  const number = (name: string, fallback: number) => {
    const value = Number(argValue(args, name) ?? fallback);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number`);
    return value;
  };
  const run: SharedBudgetRun = {
    groups: number("--n", quick ? 500 : 10_000),
    ratePerMinute: number("--rate", quick ? 400 : 180),
    stacks: number("--stacks", 4),
    skipCheckpoints: args.includes("--skip-checkpoints"),
    budget: args.includes("--no-budget") ? "off" : args.includes("--unshared") ? "per-process" : "shared",
    workRoot: path.join(REPO_ROOT, ".work"),
  };
  const out = argValue(args, "--out") ?? (quick ? path.join(REPO_ROOT, ".work", "bench-quick") : path.join(REPO_ROOT, "docs", "bench"));
  const result = await measureSharedBudget(run);
  mkdirSync(out, { recursive: true });
  const name = run.budget === "off" ? "rate-budget-none" : run.budget === "per-process" ? "rate-budget-unshared" : "rate-budget";
  writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(out, `${name}.md`), sharedBudgetMarkdown(result));
  console.log(sharedBudgetMarkdown(result));
}

async function single(): Promise<void> {
  const [requests, windowSeconds] = (process.env["BENCH_RATE"] ?? "180/60").split("/").map(Number);
  const groups = Number(process.env["BENCH_GROUPS"] ?? "300");
  if (!requests || !windowSeconds || !groups) throw new Error("BENCH_RATE must be N/SECONDS and BENCH_GROUPS a number");
  const result = await measureRateLimitedUp({ requests, windowSeconds, groups, workRoot: path.join(REPO_ROOT, ".work") });
  console.log(
    `rate limit ${requests}/${windowSeconds}s, ${groups} groups: created ${result.created}, ${result.admitted} requests admitted and ` +
      `${result.limited} refused (429) in ${result.seconds.toFixed(1)} s = ${result.rate.toFixed(2)} req/s, ` +
      `${(result.fractionOfAllowed * 100).toFixed(1)}% of the allowed ${(requests / windowSeconds).toFixed(2)} req/s (up took ${result.upSeconds.toFixed(1)} s)`,
  );
}

if (require.main === module) {
  const args = process.argv.slice(2);
  (args.includes("--shared") ? shared(args) : single()).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
