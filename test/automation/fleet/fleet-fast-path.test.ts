// The record-first sign-up (issue #44, docs/fleet-replicas.md "A sign-up answered
// before its engine run"), engine-backed on a file backend: a new group's ensure
// answered with the service's token before any engine run, the group in the run
// record (never its token) until a batched run adopts it into the state, list()
// and remove() seeing it at once, a replica killed right after ensure returned
// taken over by the next one (its takeover adopts), refused input failing only
// its own call.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type GroupSpec, GroupsValidationError, UserGroupExistsError, UserGroupFleet } from "../../../provider/automation";
import type { SignUpSeam } from "../../../provider/automation/fleet";
import { peekRecord, recordedElsewhere } from "../../../provider/automation/fleet/sign-ups";
import { markRun, PROJECT_NAME, readStateWithSecrets, selectStack, stopLostRun } from "../../../provider/automation/engine";
import { leaseStoreFor, RUN_ID_ENV, type RunLease } from "../../../provider/automation/lease";
import type { FleetShards } from "../../../provider/automation/fleet/fleet-shards";
import { clockWith } from "../../../provider/clock";
import { groupsInState } from "../../../provider/automation/fleet/fleet-state";
import { parseRunRecord, type RunRecord } from "../../../provider/backends";
import { UserGroupsClient } from "../../../provider/client/http-client";
import { useStackFixture } from "../../support/stack-fixture";

const KEY = "fleet-fast-key-0001";
const { server, env, envVars, runOptions } = useStackFixture({ label: "fleet-fast", apiKeys: [KEY], passphrase: "fleet-fast" });

/** PulumiCommand's runner (not in its typings): what every workspace command goes through. */
type CommandRunner = { run(args: string[], cwd: string, env: Record<string, string>, ...rest: unknown[]): Promise<unknown> };

const tokenOf = (id: string) => server.groups().find((g) => g.user_group_id === id)?.token;

/** A gate the adopting run waits at: the test sees the moment between the answer and the adoption. */
function gated(): { seam: (engine: SignUpSeam) => SignUpSeam; open: () => void; adoptions: number } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = {
    adoptions: 0,
    open: () => open(),
    seam: (engine: SignUpSeam): SignUpSeam => ({
      underLease: (shard, body) =>
        engine.underLease(shard, (held) =>
          body({
            ...held,
            epoch: held.epoch,
            adopt: async (entries) => {
              await gate;
              state.adoptions += 1;
              return held.adopt(entries);
            },
          }),
        ),
    }),
  };
  return state;
}

function fleetOf(stack: string, signUps: "engine" | ((engine: SignUpSeam) => SignUpSeam) = "engine"): UserGroupFleet {
  return new UserGroupFleet(runOptions(stack, { workDir: path.join(env.workDir, stack), lockTimeoutMs: 120_000 }), undefined, signUps);
}

/** The run record of the stack's root shard, as the file backend holds it (the newest generation). */
function recordOf(stack: string): RunRecord | undefined {
  const dir = path.join(env.backendDir, ".user-groups", "leases", PROJECT_NAME, encodeURIComponent(stack));
  if (!existsSync(dir)) return undefined;
  const newest = readdirSync(dir)
    .filter((name) => /^lease-\d+\.json$/.test(name))
    .sort((a, b) => Number(a.slice(6, -5)) - Number(b.slice(6, -5)))
    .at(-1);
  return newest === undefined ? undefined : parseRunRecord(readFileSync(path.join(dir, newest), "utf8"));
}

async function stateGroups(stack: string) {
  const { stack: selected, dispose } = await selectStack(runOptions(stack, { workDir: path.join(env.workDir, `${stack}-reader`) }), async () => ({}));
  try {
    return groupsInState(await readStateWithSecrets(selected));
  } finally {
    await dispose();
  }
}

describe("record-first sign-ups", () => {
  const fleets: UserGroupFleet[] = [];
  afterAll(async () => {
    for (const fleet of fleets) await fleet.close().catch(() => undefined);
  });

  /** A stack whose first group an engine run adopted, and a record-first fleet on it whose adoptions wait for `control`. */
  async function heldAfterFirst(stack: string, first: { name: string; userGroupId: string }) {
    const before = fleetOf(stack);
    await before.ensure(first);
    await before.close();
    const control = gated();
    const fleet = fleetOf(stack, control.seam);
    fleets.push(fleet);
    return { control, fleet };
  }

  it("answers with the service's token before any engine run, records the group (no token) until a batched run adopts it into the state", async () => {
    const control = gated();
    const fleet = fleetOf("fast-a", control.seam);
    fleets.push(fleet);
    const spec: GroupSpec = { name: "Acme", userGroupId: "acme", properties: { plan: "team" } };
    const got = await fleet.ensure(spec);
    expect(got).toMatchObject({ change: "create", userGroupId: "acme", name: "Acme", apiEnvironmentTag: "Customer" });
    expect(got.token).toBe(tokenOf("acme"));
    expect(fleet.engineRuns).toBe(0);
    expect(control.adoptions).toBe(0);
    // In the record, with the inputs a program declares, and never the token.
    const record = recordOf("fast-a");
    expect(record?.created?.map((entry) => entry.resourceName)).toEqual(["default.acme"]);
    expect(record?.created?.[0]?.inputs).toEqual({ name: "Acme", userGroupId: "acme", properties: { plan: "team" } });
    expect(JSON.stringify(record)).not.toContain(got.token);
    // Proven under the stack's secret (lease/created-proof.ts): a takeover adopts nothing else.
    expect(record?.created?.[0]?.proof).toMatch(/^v1:[A-Za-z0-9_-]{43}$/);
    // Not in the state yet; list() shows it at once, token included; a repeated ensure is answered with no request.
    expect(await stateGroups("fast-a")).toEqual([]);
    expect((await fleet.list()).map((g) => [g.userGroupId, g.token])).toEqual([["acme", got.token]]);
    // Another replica sees it at once too (issue #44 item 4): the record's proven entry, its token read back from the service.
    // (An engine-run-path replica, the default: its list() reads the record too.)
    const other = new UserGroupFleet(runOptions("fast-a", { workDir: path.join(env.workDir, "fast-a-other"), lockTimeoutMs: 120_000 }));
    fleets.push(other);
    expect((await other.list()).map((g) => [g.userGroupId, g.name, g.token, g.apiEnvironmentTag])).toEqual([["acme", "Acme", got.token, "Customer"]]);
    const requests = server.journal().length;
    expect(await fleet.ensure(spec)).toMatchObject({ change: "same", token: got.token });
    expect(server.journal().length).toBe(requests);

    control.open();
    await fleet.signUps!.idle(0);
    expect(control.adoptions).toBe(1);
    expect(recordOf("fast-a")?.created ?? []).toEqual([]);
    // The state as a slow-path ensure leaves it: the group, the service's token a secret (adoptExisting, which is no change, aside).
    const held = await stateGroups("fast-a");
    expect(held).toMatchObject([{ resourceName: "default.acme", userGroupId: "acme", name: "Acme", properties: { plan: "team" }, token: got.token, teamId: got.teamId, apiEnvironmentTag: "Customer" }]);
    const stateFile = readdirSync(path.join(env.backendDir, ".pulumi", "stacks", PROJECT_NAME)).find((name) => name.startsWith("fast-a.json"));
    expect(readFileSync(path.join(env.backendDir, ".pulumi", "stacks", PROJECT_NAME, stateFile!), "utf8")).not.toContain(got.token);
    expect(await fleet.ensure(spec)).toMatchObject({ change: "same", token: got.token });
    expect(fleet.engineRuns).toBe(0);
    expect(server.groups().filter((g) => g.user_group_id === "acme")).toHaveLength(1);
  }, 180_000);

  it("removes a group not yet adopted, leaving nothing behind; refused input fails only its own call", async () => {
    const control = gated();
    const fleet = fleetOf("fast-b", control.seam);
    fleets.push(fleet);
    const globex = await fleet.ensure({ name: "Globex", userGroupId: "globex" });
    expect(globex.token).toBe(tokenOf("globex"));
    // Removed before its adoption: the remove waits for it (the state then holds it) and deletes it.
    const removing = fleet.remove("globex");
    control.open();
    expect(await removing).toMatchObject({ change: "delete" });
    expect(tokenOf("globex")).toBeUndefined();
    // Someone else's group: its ensure fails alone, with today's error; an invalid spec fails before any request.
    await new UserGroupsClient({ baseUrl: server.url, apiKey: KEY }).getOrCreate({ name: "Theirs", user_group_id: "taken" });
    const [ours, theirs, invalid] = await Promise.allSettled([
      fleet.ensure({ name: "Initech", userGroupId: "initech" }),
      fleet.ensure({ name: "Mine", userGroupId: "taken" }),
      fleet.ensure({ name: " ", userGroupId: "x" }),
    ]);
    expect(ours).toMatchObject({ status: "fulfilled", value: { change: "create" } });
    expect((ours as PromiseFulfilledResult<{ token: string }>).value.token).toBe(tokenOf("initech"));
    expect((theirs as PromiseRejectedResult).reason).toBeInstanceOf(UserGroupExistsError);
    expect(((theirs as PromiseRejectedResult).reason as Error).message).toMatch(/"taken" already exists in the Customer environment.*adoptExisting: true/s);
    expect((invalid as PromiseRejectedResult).reason).toBeInstanceOf(GroupsValidationError);
    expect(server.groups().map((g) => g.user_group_id).filter((id) => ["globex", "initech", "taken"].includes(id)).sort()).toEqual(["initech", "taken"]);
    expect(server.groups().find((g) => g.user_group_id === "taken")?.name).toBe("Theirs");
    await fleet.signUps!.idle(0);
    expect((await stateGroups("fast-b")).map((g) => g.userGroupId)).toEqual(["initech"]);
    expect(recordOf("fast-b")?.created ?? []).toEqual([]);
    expect((await fleet.list()).map((g) => g.userGroupId)).toEqual(["initech"]);
  }, 240_000);

  it("another replica's list() shows a group answered elsewhere while a run of its own marks its stack (PostgreSQL: the engine session's epoch in the backend URL)", async () => {
    // The window PostgreSQL's fault history found (docs/fleet-replicas.md): a replica's list() read the record and the state,
    // and meanwhile a run of that replica took the shard's lease. On PostgreSQL, markRun gives the stack's workspace a backend
    // URL naming the run's epoch (its engine session's application_name); the key the list checked the record's proofs with was
    // looked up by the workspace's backend URL as it was then, not as the state was read: no key, every entry "unproven", the
    // group answered elsewhere not listed (until its adoption put it in the state).
    // The stack's first group, adopted into the state; the second answered record-first, its adoption held.
    const { control, fleet } = await heldAfterFirst("fast-d", { name: "First", userGroupId: "first" });
    const got = await fleet.ensure({ name: "Umbrella", userGroupId: "umbrella" });
    expect(control.adoptions).toBe(0);
    const options = runOptions("fast-d", { workDir: path.join(env.workDir, "fast-d-lister") });
    const { stack, backendUrl, dispose } = await selectStack(options, async () => ({}));
    const store = leaseStoreFor(backendUrl, PROJECT_NAME, "fast-d");
    try {
      // The list's reads, in its order: the record, then the state...
      const record = await peekRecord(store);
      const state = await readStateWithSecrets(stack);
      expect(record?.created?.map((entry) => entry.resourceName)).toEqual(["default.umbrella"]);
      // ...then a run of this replica takes the lease, as PostgreSQL's store names it (fenceEnv), before the record is checked.
      const fenced = { PULUMI_BACKEND_URL: `${backendUrl}?application_name=ug-engine:0123456789abcdef:7` };
      const unmark = markRun(stack, { runId: "run-of-this-replica", current: {}, store: { fenceEnv: () => fenced } } as unknown as RunLease);
      try {
        const inState = new Set(groupsInState(state).map((group) => group.resourceName));
        expect([...inState]).toEqual(["default.first"]);
        const listed = await recordedElsewhere(options, { stack, stackName: "fast-d", state }, record, inState);
        expect(listed.map((group) => [group.userGroupId, group.token])).toEqual([["umbrella", got.token]]);
      } finally {
        unmark();
      }
    } finally {
      await store?.close();
      await dispose();
    }
    control.open();
    await fleet.signUps!.idle(0);
    expect((await fleet.list()).map((group) => [group.userGroupId, group.token])).toEqual([
      ["first", tokenOf("first")],
      ["umbrella", got.token],
    ]);
  }, 120_000);

  it.skipIf(process.platform !== "linux")("a read of the replica outside its sign-up session is no process of the session's run: the session's lost lease kills none of it, its own adopting run carries its id", async () => {
    // PostgreSQL's fault history (docs/fleet-replicas.md): r1's ensure failed with `pulumi stack export` SIGKILLed. A sign-up
    // session holds its shard's lease long (until its adoption); markRun put its run id on the shard's shared workspace, so a
    // state read of another call of the same replica meanwhile (an F2 read, a list(): on PostgreSQL each a `pulumi stack
    // export`) carried that id, and when the session lost its lease (r1 behind the black hole) stopLostRun killed every process
    // of this host carrying it, the read among them. Replayed: the session holds the lease (its adoption held), a read of the
    // same stack object outside it is under way (a stand-in process with the environment the read gives its CLI, alive until
    // the lost run is stopped), then the lost run is stopped.
    const { control, fleet } = await heldAfterFirst("fast-e", { name: "Stark", userGroupId: "stark" });
    const got = await fleet.ensure({ name: "Wayne", userGroupId: "wayne" });
    const runId = recordOf("fast-e")?.runId;
    expect(runId).toBeTruthy();
    // The replica's shard stack: the very object its batches, its list() and its sign-up session use.
    const { stack } = await (fleet as unknown as { fleetShards: FleetShards }).fleetShards.open(0);
    const workDir = stack.workspace.workDir;
    // Its commands' runner (one per CLI, shared by the process's workspaces: only this stack's commands are looked at).
    const command = stack.workspace.pulumiCommand as unknown as CommandRunner;
    const run = command.run;
    let reader: ChildProcess | undefined;
    let spawned!: () => void;
    const started = new Promise<void>((resolve) => (spawned = resolve));
    const upRunIds: (string | undefined)[] = [];
    command.run = (args, cwd, env, ...rest) => {
      if (cwd !== workDir) return run.call(command, args, cwd, env, ...rest);
      if (args[0] === "up") upRunIds.push(env[RUN_ID_ENV]);
      if (args[0] !== "stack" || args[1] !== "export" || reader !== undefined) return run.call(command, args, cwd, env, ...rest);
      reader = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { env: { ...process.env, ...env }, stdio: "ignore" });
      spawned();
      return new Promise((resolve, reject) =>
        reader!.on("exit", (_code, signal) => (signal === "SIGKILL" ? reject(new Error("pulumi stack export: killed with SIGKILL")) : resolve(run.call(command, args, cwd, env, ...rest)))),
      );
    };
    try {
      const read = stack.exportStack();
      read.catch(() => undefined); // awaited below; a kill fails it there
      await started;
      // The session's lease is lost: its run is stopped for good (no grace waited for here).
      const killed = await stopLostRun(runId!, clockWith({ sleep: async () => {} }));
      expect(killed).not.toContain(reader!.pid);
      reader!.kill("SIGTERM");
      expect((await read).deployment).toBeDefined();
      // The session's own engine run still carries its run id (a lost session's run is still stopped).
      control.open();
      await fleet.signUps!.idle(0);
      expect(upRunIds).toEqual([runId]);
    } finally {
      control.open();
      reader?.kill("SIGKILL");
      command.run = run;
    }
    expect((await stateGroups("fast-e")).map((group) => [group.userGroupId, group.token])).toEqual([
      ["stark", tokenOf("stark")],
      ["wayne", got.token],
    ]);
  }, 120_000);

  it.skipIf(process.platform !== "linux")("a replica killed right after ensure returned is taken over: the next holder adopts the recorded group", async () => {
    const worker = path.join(__dirname, "fast-path-worker.cjs");
    const internal = path.join(__dirname, "../../../dist/provider/automation/internal.js");
    const job = { stack: "fast-c", workDir: path.join(env.workDir, "fast-c-worker"), internal, spec: { name: "Hooli", userGroupId: "hooli" } };
    const child = spawn(process.execPath, [worker], { env: { ...process.env, ...envVars(), PULUMI_CONFIG_PASSPHRASE: "fleet-fast", FAST_PATH_JOB: JSON.stringify(job) }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const exit = await new Promise<NodeJS.Signals | number | null>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
    expect(exit, err).toBe("SIGKILL");
    const answered = JSON.parse(out.trim().split("\n").at(-1)!) as { change: string; token: string };
    expect(answered.change).toBe("create");
    expect(answered.token).toBe(tokenOf("hooli"));
    // Killed before its adoption: the record names it (the state may not hold it yet).
    const before = recordOf("fast-c");
    expect((before?.created ?? []).map((e) => e.resourceName).concat((await stateGroups("fast-c")).map((g) => g.resourceName))).toContain("default.hooli");
    // The next replica (this process) asks again: its takeover adopts the recorded group, and it is answered from the state.
    const fleet = fleetOf("fast-c");
    fleets.push(fleet);
    const again = await fleet.ensure(job.spec);
    expect(again).toMatchObject({ token: answered.token });
    expect(["same", "create"]).toContain(again.change);
    await fleet.signUps!.idle(0);
    expect((await stateGroups("fast-c")).map((g) => [g.userGroupId, g.token])).toEqual([["hooli", answered.token]]);
    expect(recordOf("fast-c")?.created ?? []).toEqual([]);
    expect(server.groups().filter((g) => g.user_group_id === "hooli")).toHaveLength(1);
  }, 240_000);
});
