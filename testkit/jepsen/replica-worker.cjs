// One replica of a sign-up service, as its own OS process, driven over stdio
// (testkit/jepsen/replica.ts): one UserGroupFleet, loaded by name as a service
// loads it (JEPSEN_REPLICA: JSON { stack, backendUrl, workDir, shardSize?,
// lockTimeoutMs? }; credentials and passphrase from its environment). Each
// stdin line is a call { op, f: "ensure"|"remove"|"list", id? } or
// { close: true }; calls run concurrently, and each answer is one stdout line
// { op, ok: true, value } or { op, ok: false, error: { code, message, causes } }.
// Nothing secret is printed except the tokens a caller gets anyway.
"use strict";
const readline = require("node:readline");
const { UserGroupFleet } = require("pulumi-user-groups/automation");

const job = JSON.parse(process.env.JEPSEN_REPLICA ?? "{}");
const fleet = new UserGroupFleet({
  stack: job.stack,
  backendUrl: job.backendUrl,
  workDir: job.workDir,
  ...(job.shardSize !== undefined ? { shardSize: job.shardSize } : {}),
  ...(job.lockTimeoutMs !== undefined ? { lockTimeoutMs: job.lockTimeoutMs } : {}),
});

const send = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

function errorOf(error) {
  const causes = [];
  for (let cause = error && error.cause, depth = 0; cause && depth < 5; cause = cause.cause, depth++) {
    if (typeof cause.code === "string") causes.push(cause.code);
  }
  return {
    ...(error && typeof error.code === "string" ? { code: error.code } : {}),
    ...(error && typeof error.retryable === "boolean" ? { retryable: error.retryable } : {}),
    message: String((error && error.message) || error).slice(0, 4000),
    causes,
  };
}

async function call(request) {
  switch (request.f) {
    case "ensure": {
      const result = await fleet.ensure({ name: `Customer ${request.id}`, userGroupId: request.id });
      return { change: result.change, token: result.token };
    }
    case "remove": {
      const result = await fleet.remove(request.id);
      return { change: result.change };
    }
    case "list": {
      const groups = await fleet.list();
      return { groups: groups.map((g) => ({ userGroupId: g.userGroupId, token: g.token })) };
    }
    default:
      throw new Error(`unknown call ${request.f}`);
  }
}

let closing;
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "") return;
  const request = JSON.parse(line);
  if (request.close) {
    closing ??= fleet.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
    return;
  }
  call(request).then(
    (value) => send({ op: request.op, ok: true, value }),
    (error) => send({ op: request.op, ok: false, error: errorOf(error) }),
  );
});
send({ ready: true, pid: process.pid });
