// Issue 32 item 5: "Run records' `adopt` lists are only ever what this stack's
// own runs put there, checked against the stack's own pending creates." The
// record (a lease file in a file backend, a row of user_groups_run_records on
// PostgreSQL) is outside data: a takeover adopts an entry only if the stack's
// checkpoint holds a pending create of that very group (our resource type, this
// stack's URN, the same inputs). A planted entry naming another stack's group is
// refused, said on the output, and the group is neither renamed, adopted nor its
// token handed out; a genuine pending create is still adopted.
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { type TakeoverReport, UserGroupFleet } from "../../../provider/automation";
import { checkAdoptEntries } from "../../../provider/automation/engine/takeover";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "adopt-record-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("adopt-record");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

function fleetOf(stack: string, extra: { onTakeover?: (report: TakeoverReport) => void; onOutput?: (text: string) => void } = {}): UserGroupFleet {
  return new UserGroupFleet({
    stack,
    backendUrl: `file://${env.backendDir}`,
    workDir: path.join(env.workDir, stack),
    passphrase: "adopt-record",
    lockTimeoutMs: 20_000,
    envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    ...extra,
  });
}

const checkpointOf = (stack: string) => path.join(env.backendDir, ".pulumi", "stacks", "user-groups", `${stack}.json`);
const leaseDirOf = (stack: string) => path.join(env.backendDir, ".user-groups", "leases", "user-groups", stack);

/** The newest generation of the stack's lease file (its run record). */
function latestLease(stack: string): { file: string; generation: number; record: Record<string, unknown> } {
  const generation = Math.max(...readdirSync(leaseDirOf(stack)).map((name) => Number(/^lease-(\d+)\.json$/.exec(name)?.[1] ?? -1)));
  const file = path.join(leaseDirOf(stack), `lease-${generation}.json`);
  return { file, generation, record: JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown> };
}

describe("checking the adopt list against the stack's own pending creates", () => {
  it("keeps an entry only with a pending create of the same group and inputs", () => {
    const pending = [{ resourceName: "default.mine", inputs: { name: "Mine", userGroupId: "mine" } }];
    const { kept, refused } = checkAdoptEntries(
      [
        { resourceName: "default.mine", inputs: { name: "Mine", userGroupId: "mine" } },
        { resourceName: "default.victim", inputs: { name: "Taken", userGroupId: "victim" } },
      ],
      pending,
    );
    expect(kept.map((e) => e.resourceName)).toEqual(["default.mine"]);
    expect(refused).toEqual([{ resourceName: "default.victim", why: expect.stringMatching(/no pending create/) }]);
    expect(checkAdoptEntries([{ resourceName: "default.mine", inputs: { name: "Renamed", userGroupId: "mine" } }], pending).refused).toHaveLength(1);
  });

  it("a planted entry naming another stack's group is refused (not renamed, adopted, or its token handed out); a genuine pending create is adopted", async () => {
    // Another stack's group, made as usual.
    const victims = fleetOf("victims");
    const victim = await victims.ensure({ name: "Victim group", userGroupId: "victim-1" }).finally(() => victims.close());
    expect(victim.change).toBe("create");

    // The attacked stack: two groups; then its checkpoint as a dead run leaves it, mine-2's create cut short (the
    // service made it, the state holds only the pending create with the inputs it was declared with).
    const first = fleetOf("attacked");
    const made = await first.ensureMany([{ name: "Mine 1", userGroupId: "mine-1" }, { name: "Mine 2", userGroupId: "mine-2" }]).finally(() => first.close());
    const checkpoint = JSON.parse(readFileSync(checkpointOf("attacked"), "utf8")) as { checkpoint: { latest: { resources: Array<{ urn: string; type: string; inputs: Record<string, unknown> }>; pending_operations?: unknown[] } } };
    const latest = checkpoint.checkpoint.latest;
    const cut = latest.resources.find((r) => r.urn.endsWith("::default.mine-2"))!;
    latest.resources = latest.resources.filter((r) => r !== cut);
    latest.pending_operations = [{ type: "creating", resource: { urn: cut.urn, type: cut.type, custom: true, inputs: cut.inputs } }];
    writeFileSync(checkpointOf("attacked"), JSON.stringify(checkpoint));
    rmSync(`${checkpointOf("attacked")}.attrs`, { force: true });

    // The planted record: a newer lease generation, released, whose adopt list names the victim (and, as a takeover
    // of ours would have written it, mine-2 with its pending create's inputs).
    const { generation, record } = latestLease("attacked");
    const planted = {
      ...record,
      runId: "planted-run",
      released: true,
      unfinished: [],
      adopt: [
        { resourceName: "default.victim-1", inputs: { name: "Taken over", userGroupId: "victim-1" } },
        { resourceName: "default.mine-2", inputs: cut.inputs },
      ],
    };
    writeFileSync(path.join(leaseDirOf("attacked"), `lease-${generation + 1}.json`), JSON.stringify(planted), { mode: 0o600 });

    const takeovers: TakeoverReport[] = [];
    let output = "";
    const fleet = fleetOf("attacked", { onTakeover: (report) => takeovers.push(report), onOutput: (text) => void (output += text) });
    try {
      const third = await fleet.ensure({ name: "Mine 3", userGroupId: "mine-3" });
      expect(third.change).toBe("create");
      expect(takeovers).toHaveLength(1);
      expect(takeovers[0]!.adopted).toEqual(["default.mine-2"]);
      expect(takeovers[0]!.notAdopted).toEqual(["default.victim-1"]);
      expect(output).toMatch(/Not adopting "default\.victim-1" listed in the run record of stack "attacked": the stack's state holds no pending create of it/);

      // The victim's group: its name and token as its own stack made them, and never in this stack's list.
      const stored = server.groups().find((g) => g.user_group_id === "victim-1");
      expect(stored).toMatchObject({ name: "Victim group", token: victim.token });
      const listed = await fleet.list();
      expect(listed.map((g) => g.userGroupId)).toEqual(["mine-1", "mine-2", "mine-3"]);
      expect(listed.map((g) => g.token)).not.toContain(victim.token);
      // The genuine pending create: adopted with the service's token (the same as the dead run's caller got).
      const onServer = new Map(server.groups().map((g) => [g.user_group_id, g.token]));
      expect(listed.find((g) => g.userGroupId === "mine-2")?.token).toBe(onServer.get("mine-2"));
      expect(made[1]!.token).toBe(onServer.get("mine-2"));
      // Dealt with: the state's pending creates cleared, the record's adopt list empty.
      const after = JSON.parse(readFileSync(checkpointOf("attacked"), "utf8")) as { checkpoint: { latest: { pending_operations?: unknown[] } } };
      expect(after.checkpoint.latest.pending_operations ?? []).toEqual([]);
      expect(latestLease("attacked").record["adopt"]).toEqual([]);
    } finally {
      await fleet.close();
    }
  }, 240_000);
});
