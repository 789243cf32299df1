// Crash consistency bench: kill -9 a `pulumi up` while it creates or rotates
// many groups, recover, check convergence (the trials: test/support/crash-trials.ts).
//   npm run bench:crash          (BENCH_TRIALS=20 BENCH_GROUPS=15 by default)
//   BENCH_SHARD_SIZE=4 npm run bench:crash   the same, each up in shards of 4 (several shards killed at once)
// test/reliability/crash.test.ts runs three trials of the same function (a kill
// early in a create, mid-way in a sharded create, late in a rotation).
import path from "node:path";
import { describeTrial, runCrashBench } from "../testkit/crash-trials.js";

async function main(): Promise<void> {
  // The fake server here is unthrottled: no rate budget (the provider's default is the real service's 180/60).
  process.env.USER_GROUPS_RATE_LIMIT ??= "off";
  const trials = Number(process.env["BENCH_TRIALS"] ?? "20");
  const groups = Number(process.env["BENCH_GROUPS"] ?? "15");
  const shardSize = process.env["BENCH_SHARD_SIZE"] === undefined ? undefined : Number(process.env["BENCH_SHARD_SIZE"]);
  if (!Number.isInteger(trials) || trials < 1 || !Number.isInteger(groups) || groups < 2) throw new Error("BENCH_TRIALS must be >= 1 and BENCH_GROUPS >= 2");
  if (shardSize !== undefined && (!Number.isInteger(shardSize) || shardSize < 1)) throw new Error("BENCH_SHARD_SIZE must be an integer >= 1");
  const summary = await runCrashBench({
    trials,
    groups,
    ...(shardSize !== undefined ? { shardSize } : {}),
    workRoot: path.resolve(__dirname, "../../.work"),
    onTrial: (r, i) => console.log(describeTrial(r, i)),
  });
  const { results, ...counts } = summary;
  console.log(`crash bench: ${JSON.stringify(counts)}`);
  if (summary.converged !== summary.trials) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
