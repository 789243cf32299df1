// A replica killed right after its ensure returned (fleet-fast-path.test.ts): a
// record-first fleet (FAST_PATH_JOB: { stack, workDir, internal, spec }) ensures
// one group, prints its answer as one JSON line, and SIGKILLs itself at once:
// no close, no adoption awaited.
"use strict";

async function main() {
  const job = JSON.parse(process.env.FAST_PATH_JOB ?? "{}");
  const { fastPathFleet } = require(job.internal);
  const fleet = fastPathFleet({ stack: job.stack, workDir: job.workDir, lockTimeoutMs: 60_000 });
  const got = await fleet.ensure(job.spec);
  process.stdout.write(`${JSON.stringify({ change: got.change, token: got.token })}\n`, () => process.kill(process.pid, "SIGKILL"));
}

main().catch((error) => {
  process.stderr.write(`fast-path worker failed: ${error && error.message}\n`);
  process.exitCode = 1;
});
