// UserGroupFleet (CONTRACT "Fleet API"), in one process on a file backend:
// additive, idempotent without a run, batched, per-caller outcomes, lock waiting.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FleetClosedError,
  type GroupSpec,
  GroupsValidationError,
  StackLockTimeoutError,
  UserGroupExistsError,
  UserGroupFleet,
} from "../../../provider/automation";
import { UserGroupsClient } from "../../../provider/client/http-client";
import { useStackFixture } from "../../support/stack-fixture";
import { runUserGroupsCli } from "../../support/user-groups-cli";
import { waitFor } from "../../support/wait-for";

const KEY = "fleet-customer-key-0001";
const { server, env, envVars, runOptions } = useStackFixture({ label: "fleet", apiKeys: [KEY], passphrase: "fleet-test" });

function fleetOf(stack: string, extra: { lockTimeoutMs?: number; workDir?: string; onLockWait?: () => void } = {}): UserGroupFleet {
  return new UserGroupFleet(
    runOptions(stack, {
      workDir: extra.workDir ?? path.join(env.workDir, "fleet"),
      ...(extra.lockTimeoutMs !== undefined ? { lockTimeoutMs: extra.lockTimeoutMs } : {}),
      ...(extra.onLockWait !== undefined ? { onLockWait: extra.onLockWait } : {}),
    }),
  );
}

const tokenOf = (id: string) => server.groups().find((g) => g.user_group_id === id)?.token;
const requestsSince = (mark: number) => server.journal().slice(mark);

describe("UserGroupFleet", () => {
  const fleet = () => shared;
  let shared: UserGroupFleet;
  beforeAll(() => {
    shared = fleetOf("customers");
  });
  afterAll(async () => {
    await shared?.close();
  });

  it("refuses an invalid spec before any run or request", async () => {
    const error = await fleet()
      .ensure({ name: " ", userGroupId: "x", extra: true } as GroupSpec) // as a JavaScript caller may pass it
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GroupsValidationError);
    expect((error as Error).message).toMatch(/name/);
    expect((error as Error).message).toMatch(/extra/);
    expect(fleet().engineRuns).toBe(0);
    expect(server.journal()).toEqual([]);
  });

  it("creates groups asked for together in one engine run, each caller getting its own group's token", async () => {
    const ids = ["acme", "globex", "initech", "umbrella"];
    const results = await Promise.all(ids.map((id) => fleet().ensure({ name: `${id} Inc`, userGroupId: id, properties: { plan: "team" } })));
    // On the record-first path: answered before any engine run; one adopting run puts them in the state.
    await fleet().signUps?.closeAll();
    expect(fleet().engineRuns + (fleet().signUps?.adoptingRuns ?? 0)).toBe(1);
    for (const [i, id] of ids.entries()) {
      expect(results[i]).toMatchObject({ userGroupId: id, change: "create", name: `${id} Inc`, apiEnvironmentTag: "Customer" });
      expect(results[i]!.token).toBe(tokenOf(id));
    }
  });

  it("answers a group held as asked from the state: change same, no engine run, no API request", async () => {
    const runs = fleet().engineRuns;
    const mark = server.journal().length;
    const again = await fleet().ensure({ name: "acme Inc", userGroupId: "acme", properties: { plan: "team" }, mapping: {} });
    expect(again).toMatchObject({ change: "same", token: tokenOf("acme") });
    expect(fleet().engineRuns).toBe(runs);
    expect(requestsSince(mark)).toEqual([]);
  });

  it("is additive: a call leaves every group it does not name as it was", async () => {
    const before = server.groups().map((g) => ({ id: g.user_group_id, token: g.token, name: g.name }));
    const mark = server.journal().length;
    const hooli = await fleet().ensure({ name: "Hooli", userGroupId: "hooli" });
    expect(hooli.change).toBe("create");
    // Only hooli's requests reached the service; the others are untouched.
    expect(new Set(requestsSince(mark).map((r) => (r.body as { user_group_id?: string } | null)?.user_group_id))).toEqual(new Set(["hooli"]));
    const after = server.groups().map((g) => ({ id: g.user_group_id, token: g.token, name: g.name }));
    expect(after.filter((g) => g.id !== "hooli")).toEqual(before);
    expect((await fleet().list()).map((g) => g.userGroupId)).toEqual(["acme", "globex", "hooli", "initech", "umbrella"]);
  });

  it("updates in place and rotates the token exactly as UserGroup does", async () => {
    const oldToken = tokenOf("globex");
    const renamed = await fleet().ensure({ name: "Globex Corp", userGroupId: "globex", properties: { plan: "team" } });
    expect(renamed).toMatchObject({ change: "update", name: "Globex Corp", token: oldToken });
    const rotated = await fleet().ensure({ name: "Globex Corp", userGroupId: "globex", properties: { plan: "team" }, rotationTrigger: "2026-11" });
    expect(rotated.change).toBe("update");
    expect(rotated.token).not.toBe(oldToken);
    expect(rotated.token).toBe(tokenOf("globex"));
    expect(server.groups().find((g) => g.user_group_id === "globex")?.name).toBe("Globex Corp");
  });

  it("fails only the caller whose group fails; the others of the same run succeed", async () => {
    const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    await client.getOrCreate({ name: "Someone else's", user_group_id: "taken" });
    const runs = fleet().engineRuns;
    const [taken, fresh] = await Promise.allSettled([
      fleet().ensure({ name: "Taken", userGroupId: "taken" }),
      fleet().ensure({ name: "Fresh", userGroupId: "fresh" }),
    ]);
    expect(fleet().engineRuns).toBe(runs + 1);
    expect(taken.status).toBe("rejected");
    const error = (taken as PromiseRejectedResult).reason as Error;
    expect(error).toBeInstanceOf(UserGroupExistsError);
    expect(error.message).toMatch(/"taken" already exists in the Customer environment.*adoptExisting: true/s);
    expect(fresh).toMatchObject({ status: "fulfilled", value: { change: "create", token: tokenOf("fresh") } });
    // The other group is left alone on the server, and not recorded.
    expect(server.groups().find((g) => g.user_group_id === "taken")?.name).toBe("Someone else's");
    expect((await fleet().list()).map((g) => g.userGroupId)).not.toContain("taken");
  });

  it("removes only the named group; removing one the stack does not hold changes nothing", async () => {
    const removed = await fleet().remove("hooli");
    expect(removed).toMatchObject({ userGroupId: "hooli", change: "delete" });
    expect(tokenOf("hooli")).toBeUndefined();
    expect(tokenOf("acme")).toBeDefined();
    const runs = fleet().engineRuns;
    expect(await fleet().remove("never-held")).toMatchObject({ change: "same" });
    expect(fleet().engineRuns).toBe(runs);
  });

  it("lists the stack's groups with their tokens, from the state alone", async () => {
    const mark = server.journal().length;
    const groups = await fleet().list();
    expect(groups.map((g) => g.userGroupId)).toEqual(["acme", "fresh", "globex", "initech", "umbrella"]);
    for (const group of groups) expect(group.token).toBe(tokenOf(group.userGroupId));
    expect(groups.find((g) => g.userGroupId === "globex")).toMatchObject({ name: "Globex Corp", rotationTrigger: "2026-11", properties: { plan: "team" } });
    expect(requestsSince(mark)).toEqual([]);
  });
});

describe("the GitOps CLI on a fleet's stack", () => {
  it("refuses a whole-set up or destroy without --force, and changes nothing", async () => {
    const fleet = fleetOf("fleet-vs-cli", { workDir: path.join(env.workDir, "fleet-cli") });
    try {
      await fleet.ensure({ name: "Made by the fleet", userGroupId: "by-fleet" });
    } finally {
      await fleet.close();
    }
    const repo = mkdtempSync(path.join(env.workDir, "gitops-"));
    writeFileSync(path.join(repo, "groups.yaml"), "groups:\n  - { name: From the file, userGroupId: from-file }\n");
    const cliEnv = { ...process.env, ...envVars({ PULUMI_CONFIG_PASSPHRASE: "fleet-test" }) };
    const backend = ["--backend-url", `file://${env.backendDir}`, "--stack", "fleet-vs-cli"];
    const mark = server.journal().length;
    for (const command of [["up", "--file", "groups.yaml"], ["destroy"]]) {
      const run = await runUserGroupsCli([...command, ...backend, "--yes"], { cwd: repo, env: cliEnv });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/Stack "fleet-vs-cli" is a UserGroupFleet's stack.*Nothing was changed.*--force/s);
    }
    expect(requestsSince(mark)).toEqual([]);
    expect(tokenOf("by-fleet")).toBeDefined();
    // With --force the file's whole set is applied, as asked: the fleet's group goes (it is every group: --allow-delete-all too).
    const forced = await runUserGroupsCli(["up", "--file", "groups.yaml", ...backend, "--yes", "--force", "--allow-delete-all"], { cwd: repo, env: cliEnv });
    expect(forced.code, forced.stderr).toBe(0);
    expect(tokenOf("from-file")).toBeDefined();
    expect(tokenOf("by-fleet")).toBeUndefined();
  });
});

describe("UserGroupFleet and the stack's lock", () => {
  /**
   * A lock file as another live run would hold it on the file backend: a run on
   * another host that no dead run of ours accounts for (a live one on this host
   * would need a real pulumi process: a pid of another program is a dead holder's, taken over).
   */
  function holdLock(stack: string): () => void {
    const dir = path.join(env.backendDir, ".pulumi", "locks", "organization", "user-groups", stack);
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "c0ffee00-0000-4000-8000-000000000001.json");
    writeFileSync(file, JSON.stringify({ pid: 4242, username: "other", hostname: `not-${hostname()}`, timestamp: new Date().toISOString() }));
    return () => rmSync(file, { force: true });
  }

  it("waits for a run that holds the stack, then goes through", async () => {
    let lockWaits = 0;
    const fleet = fleetOf("locked-then-free", { workDir: path.join(env.workDir, "fleet-lock"), onLockWait: () => (lockWaits += 1) });
    try {
      await fleet.ensure({ name: "First", userGroupId: "lock-first" }); // the stack exists now
      await fleet.signUps?.closeAll(); // and its sign-up adopted, its lease let go
      const release = holdLock("locked-then-free");
      const pending = fleet.ensure({ name: "Second", userGroupId: "lock-second" });
      const settled = pending.then(() => true, () => true);
      // The fleet reports each refusal of the held lock before it waits again.
      await waitFor(() => lockWaits >= 1, { timeoutMs: 30_000, what: "the fleet to find the stack locked" });
      // Still waiting for the lock: nothing reached the service for it yet.
      expect(tokenOf("lock-second")).toBeUndefined();
      release();
      expect(await settled).toBe(true);
      expect(await pending).toMatchObject({ change: "create", token: tokenOf("lock-second") });
    } finally {
      await fleet.close();
    }
  });

  it("gives up after lockTimeoutMs with an error naming the stack and the wait", async () => {
    const fleet = fleetOf("locked-for-good", { workDir: path.join(env.workDir, "fleet-lock"), lockTimeoutMs: 1_000 });
    try {
      await fleet.ensure({ name: "Held", userGroupId: "held-1" });
      await fleet.signUps?.closeAll();
      const release = holdLock("locked-for-good");
      try {
        const error = await fleet.ensure({ name: "Held 2", userGroupId: "held-2" }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StackLockTimeoutError);
        // The budget is checked between tries, and each try is an engine run: it may end a little past 1 s.
        expect((error as Error).message).toMatch(/Stack "locked-for-good" stayed locked by another run for \d+(\.\d)? s \(the lock timeout\)/);
        expect((error as StackLockTimeoutError).waitedMs).toBeGreaterThanOrEqual(1_000);
        expect(tokenOf("held-2")).toBeUndefined();
      } finally {
        release();
      }
    } finally {
      await fleet.close();
    }
  });

  it("refuses calls once closed", async () => {
    const fleet = fleetOf("closed", { workDir: path.join(env.workDir, "fleet-lock") });
    await fleet.close();
    await expect(fleet.ensure({ name: "Late", userGroupId: "late" })).rejects.toBeInstanceOf(FleetClosedError);
  });
});
