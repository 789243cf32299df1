// One replica of a service, as its own OS process: ensures the groups named in
// FLEET_WORKER_JOB (JSON: { stack, backendUrl, workDir, ids, prefix }) all at
// once through UserGroupFleet, loaded by name as a service loads it, and prints
// each outcome as one JSON line. Credentials come from its environment.
"use strict";
const { UserGroupFleet } = require("pulumi-user-groups/automation");

async function main() {
  const job = JSON.parse(process.env.FLEET_WORKER_JOB ?? "{}");
  const fleet = new UserGroupFleet({ stack: job.stack, backendUrl: job.backendUrl, workDir: job.workDir });
  const outcomes = await Promise.allSettled(job.ids.map((id) => fleet.ensure({ name: `${job.prefix} ${id}`, userGroupId: id })));
  await fleet.close();
  const report = outcomes.map((outcome, i) =>
    outcome.status === "fulfilled"
      ? { id: job.ids[i], change: outcome.value.change, token: outcome.value.token }
      : { id: job.ids[i], error: String(outcome.reason && outcome.reason.message), ...(outcome.reason && outcome.reason.code ? { code: String(outcome.reason.code) } : {}) },
  );
  process.stdout.write(`${JSON.stringify({ engineRuns: fleet.engineRuns, report })}\n`);
}

main().catch((error) => {
  process.stderr.write(`fleet worker failed: ${error && error.message}\n`);
  process.exitCode = 1;
});
