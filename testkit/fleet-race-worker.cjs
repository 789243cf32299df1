// One replica of a service, as its own OS process, running a timed history of
// calls for a few groups through UserGroupFleet (loaded by name, as a service
// loads it). FLEET_RACE_JOB (JSON): { stack, backendUrl, workDir, shardSize,
// startAt (ms since the epoch), ops: [{ at (ms after startAt), op: "ensure" |
// "remove" | "list", id }] }. Each call starts at its time, whether the ones
// before have finished or not; each outcome is one entry of the JSON line it
// prints. Credentials come from its environment.
"use strict";
const { UserGroupFleet } = require("pulumi-user-groups/automation");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function main() {
  const job = JSON.parse(process.env.FLEET_RACE_JOB ?? "{}");
  const fleet = new UserGroupFleet({ stack: job.stack, backendUrl: job.backendUrl, workDir: job.workDir, shardSize: job.shardSize, lockTimeoutMs: 90_000 });
  const outcomes = await Promise.all(
    job.ops.map(async (step) => {
      await sleep(job.startAt + step.at - Date.now());
      const started = Date.now() - job.startAt;
      try {
        if (step.op === "ensure") {
          const r = await fleet.ensure({ name: `Race ${step.id}`, userGroupId: step.id });
          return { ...step, started, ended: Date.now() - job.startAt, change: r.change, token: r.token };
        }
        if (step.op === "remove") {
          const r = await fleet.remove(step.id);
          return { ...step, started, ended: Date.now() - job.startAt, change: r.change };
        }
        const listed = await fleet.list();
        const group = listed.find((g) => g.userGroupId === step.id);
        return { ...step, started, ended: Date.now() - job.startAt, listed: group !== undefined, ...(group ? { token: group.token } : {}) };
      } catch (error) {
        return { ...step, started, ended: Date.now() - job.startAt, error: String(error && error.message), code: error && error.code };
      }
    }),
  );
  await fleet.close();
  process.stdout.write(`${JSON.stringify({ outcomes })}\n`);
}

main().catch((error) => {
  process.stderr.write(`fleet race worker failed: ${error && error.message}\n`);
  process.exitCode = 1;
});
