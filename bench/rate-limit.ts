// `up` of many groups against the fake server's rate limit (W11): how close to
// the allowed rate the provider runs, with zero failures (the measurement:
// test/support/rate-limited-up.ts).
//   npm run bench:rate-limit        (BENCH_RATE=180/60 BENCH_GROUPS=300 by default)
import path from "node:path";
import { measureRateLimitedUp } from "../test/support/rate-limited-up.js";

async function main(): Promise<void> {
  const [requests, windowSeconds] = (process.env["BENCH_RATE"] ?? "180/60").split("/").map(Number);
  const groups = Number(process.env["BENCH_GROUPS"] ?? "300");
  if (!requests || !windowSeconds || !groups) throw new Error("BENCH_RATE must be N/SECONDS and BENCH_GROUPS a number");
  const result = await measureRateLimitedUp({ requests, windowSeconds, groups, workRoot: path.resolve(__dirname, "../../.work") });
  console.log(
    `rate limit ${requests}/${windowSeconds}s, ${groups} groups: created ${result.created}, ${result.admitted} requests admitted and ` +
      `${result.limited} refused (429) in ${result.seconds.toFixed(1)} s = ${result.rate.toFixed(2)} req/s, ` +
      `${(result.fractionOfAllowed * 100).toFixed(1)}% of the allowed ${(requests / windowSeconds).toFixed(2)} req/s (up took ${result.upSeconds.toFixed(1)} s)`,
  );
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
