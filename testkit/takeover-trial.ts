// A replica killed mid-run and another taking over (CONTRACT F7, issue 25 items 4-5):
// replica A (testkit/fleet-worker.cjs, its own OS process and process group)
// ensures a batch of sign-ups; once `killAt` of them exist on the fake server its
// whole process group gets SIGKILL (as Kubernetes kills a pod). Replica B (a
// UserGroupFleet in this process) was already waiting with a sign-up of its own,
// and then serves the retried sign-ups and new ones. Measured: kill to B's first
// served sign-up, kill to all served, how long A's dynamic-provider processes
// (in a process group of their own, so not killed) lived on. Checked: every token
// B hands out is the server's, the server holds exactly the asked groups (no
// double, no orphan, nothing lost), the state holds exactly the server's groups
// with the server's tokens, nothing pending, no lock left.
// Shared by test/automation/fleet/fleet-takeover.test.ts and bench/takeover.ts.
import { spawn } from "node:child_process";
import path from "node:path";
import type { FakeServer } from "../fake-server/index.js";
import { type FleetOptions, UserGroupFleet } from "../provider/automation/index.js";
import type { TakeoverReport } from "../provider/automation/index.js";
import { commandLine, descendantsOf, isRunning } from "./kill-tree.js";

export interface TakeoverTrialOptions {
  readonly server: FakeServer;
  readonly backendUrl: string;
  /** Each replica gets a work directory below this one (inside the package: the provider resolves it from there). */
  readonly workRoot: string;
  readonly stack: string;
  /** The worker script (testkit/fleet-worker.cjs; not compiled into build/). */
  readonly worker: string;
  /** Environment of both replicas' engines: PATH with pulumi, PULUMI_HOME, passphrase, USER_GROUPS_*. */
  readonly env: Record<string, string>;
  /** Replica A's sign-ups (B retries them all after the kill). */
  readonly ids: readonly string[];
  /** New sign-ups B serves after the kill. */
  readonly newIds: readonly string[];
  /** Kill A once this many of its groups exist on the server. */
  readonly killAt: number;
  /** Injected latency per create (GET), so that creates are in flight when the kill lands. */
  readonly delayMs: number;
  readonly label: string;
}

export interface TakeoverTrialResult {
  readonly killed: boolean;
  /** A's groups on the server when the kill was sent. */
  readonly createdAtKill: number;
  /** A's processes that were not in its process group (the dynamic provider), alive right after the kill. */
  readonly orphans: number;
  /** How long the last of them lived on after the kill (ms); 0 when none. */
  readonly orphansGoneMs: number;
  /**
   * Kill to B's first served sign-up (a retried one whose group A had recorded
   * can be answered from the state before any takeover), to B's first new
   * sign-up (it needs the takeover and a run), and to all of them (ms).
   */
  readonly firstServedMs: number;
  readonly firstNewServedMs: number;
  readonly allServedMs: number;
  readonly takeovers: readonly TakeoverReport[];
  /** Each of B's sign-ups: when it was asked and answered, in ms from the kill. */
  readonly calls: ReadonlyArray<{ readonly id: string; readonly askedMs: number; readonly answeredMs: number; readonly change?: string }>;
  /** Empty when everything held. */
  readonly problems: readonly string[];
}

function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (condition()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

export async function runTakeoverTrial(options: TakeoverTrialOptions): Promise<TakeoverTrialResult> {
  const { server } = options;
  const problems: string[] = [];
  const takeovers: TakeoverReport[] = [];
  server.setFaults([{ method: "GET", action: "delay", delayMs: options.delayMs }]);
  const mine = new Set(options.ids);
  const created = () => server.groups().filter((g) => mine.has(g.user_group_id)).length;

  // Replica A, in a process group of its own (a pod).
  const job = { stack: options.stack, backendUrl: options.backendUrl, workDir: path.join(options.workRoot, `${options.label}-a`), ids: options.ids, prefix: "Customer" };
  const replicaA = spawn(process.execPath, [options.worker], {
    env: { ...process.env, ...options.env, FLEET_WORKER_JOB: JSON.stringify(job) },
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderrA = "";
  replicaA.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderrA += chunk;
  });
  const exitedA = new Promise<void>((resolve) => replicaA.on("exit", () => resolve()));

  // Replica B: a fleet in this process, like A on its own work directory.
  const fleetOptions: FleetOptions = {
    stack: options.stack,
    backendUrl: options.backendUrl,
    workDir: path.join(options.workRoot, `${options.label}-b`),
    envVars: options.env,
    lockTimeoutMs: 180_000,
    onTakeover: (report) => takeovers.push(report),
  };
  const fleet = new UserGroupFleet(fleetOptions);
  const served: Array<{ id: string; asked: number; at: number; token?: string; change?: string; error?: string }> = [];
  const signUp = (id: string, asked = Date.now()) =>
    fleet.ensure({ name: `Customer ${id}`, userGroupId: id }).then(
      (result) => void served.push({ id, asked, at: Date.now(), change: result.change, ...(result.token !== undefined ? { token: result.token } : {}) }),
      (error: unknown) => void served.push({ id, asked, at: Date.now(), error: error instanceof Error ? error.message : String(error) }),
    );

  let killedAt = 0;
  let createdAtKill = 0;
  let orphanPids: number[] = [];
  const calls: Promise<void>[] = [];
  try {
    await Promise.race([
      waitUntil(() => created() >= options.killAt, 180_000, `${options.killAt} of replica A's groups on the server`),
      exitedA.then(() => {
        throw new Error(`replica A ended before the kill: ${stderrA.slice(0, 2000)}`);
      }),
    ]);
    // B asks while A holds the stack: it waits for the lease.
    calls.push(signUp(options.newIds[0]!));
    const tree = descendantsOf(replicaA.pid!);
    createdAtKill = created();
    killedAt = Date.now();
    process.kill(-replicaA.pid!, "SIGKILL");
    await exitedA;
    // What the group kill did not reach: the dynamic provider's own process group.
    orphanPids = tree.filter((pid) => isRunning(pid) && !/(^|\/)pulumi /.test(commandLine(pid)));
    // The retried sign-ups (each as A's caller would retry it) and the other new ones.
    for (const id of options.ids) calls.push(signUp(id));
    for (const id of options.newIds.slice(1)) calls.push(signUp(id));
    let orphansGoneMs = 0;
    const orphansGone = waitUntil(() => orphanPids.every((pid) => !isRunning(pid)), 60_000, "the killed run's provider processes to exit").then(
      () => void (orphansGoneMs = orphanPids.length > 0 ? Date.now() - killedAt : 0),
      () => void problems.push(`${orphanPids.filter(isRunning).length} provider processes of the killed run still running 60 s after the kill`),
    );
    await Promise.all(calls);
    await orphansGone;
    const firstServedMs = Math.min(...served.filter((s) => s.error === undefined).map((s) => s.at)) - killedAt;
    const allServedMs = Math.max(...served.map((s) => s.at)) - killedAt;
    const fresh = new Set(options.newIds);
    const firstNewServedMs = Math.min(...served.filter((s) => s.error === undefined && fresh.has(s.id)).map((s) => s.at)) - killedAt;

    // Every caller's outcome, and the server and the state agreeing on exactly the asked groups.
    const onServer = new Map(server.groups().map((g) => [g.user_group_id, g.token]));
    const asked = [...options.ids, ...options.newIds].sort();
    for (const s of served) {
      if (s.error !== undefined) problems.push(`${s.id}: ${s.error.split("\n")[0]}`);
      else if (s.token !== onServer.get(s.id)) problems.push(`${s.id}: the token handed out is not the server's`);
    }
    const serverIds = [...onServer.keys()].sort();
    if (JSON.stringify(serverIds) !== JSON.stringify(asked)) problems.push(`the server holds [${serverIds.join(", ")}], asked were [${asked.join(", ")}]`);
    const held = await fleet.list();
    const stateIds = held.map((g) => g.userGroupId).sort();
    if (JSON.stringify(stateIds) !== JSON.stringify(serverIds)) problems.push(`the state holds [${stateIds.join(", ")}], the server [${serverIds.join(", ")}]`);
    for (const g of held) if (g.token !== onServer.get(g.userGroupId)) problems.push(`${g.userGroupId}: the state's token is not the server's`);
    return {
      killed: true,
      createdAtKill,
      orphans: orphanPids.length,
      orphansGoneMs,
      firstServedMs,
      firstNewServedMs,
      allServedMs,
      takeovers,
      calls: served.map((s) => ({ id: s.id, askedMs: s.asked - killedAt, answeredMs: s.at - killedAt, ...(s.change !== undefined ? { change: s.change } : {}) })),
      problems,
    };
  } finally {
    server.clearFaults();
    if (replicaA.exitCode === null && replicaA.signalCode === null) process.kill(-replicaA.pid!, "SIGKILL");
    await Promise.allSettled(calls);
    await fleet.close();
  }
}

/** Kill points drawn at random over a batch of `groups` (1..groups-1). */
export function killPoints(trials: number, groups: number, random: () => number): number[] {
  return Array.from({ length: trials }, () => 1 + Math.floor(random() * (groups - 1)));
}

export function describeTakeoverTrial(r: TakeoverTrialResult): string {
  const taken = r.takeovers;
  return (
    `killed at ${r.createdAtKill} created; ${r.orphans} provider processes outlived the kill, gone after ${(r.orphansGoneMs / 1000).toFixed(1)} s; ` +
    `first sign-up served ${(r.firstServedMs / 1000).toFixed(1)} s after the kill, first new one ${(r.firstNewServedMs / 1000).toFixed(1)} s, all ${(r.allServedMs / 1000).toFixed(1)} s; ` +
    `${taken.length} takeover(s): ${taken.flatMap((t) => t.removedLocks).length} locks removed, ${taken.flatMap((t) => t.pending).length} pending cleared, ` +
    `${taken.flatMap((t) => t.adopted).length} adopted, ${taken.reduce((n, t) => n + t.killedProcesses, 0)} processes killed; ` +
    `${r.problems.length === 0 ? "consistent" : `PROBLEMS: ${r.problems.join("; ")}`}`
  );
}
