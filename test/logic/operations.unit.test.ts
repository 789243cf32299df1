// The lifecycle functions (create/read/update/rotate/delete) with a real client
// against the fake server: adoption, lost answers, out-of-band changes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import { clockWith } from "../../provider/clock";
import type { CheckedInputs, UserGroupOutputs } from "../../provider/logic/inputs";
import {
  createUserGroup,
  deleteUserGroup,
  readUserGroup,
  rotateUserGroupToken,
  rotationPauseMs,
  UserGroupExistsError,
  updateUserGroup,
} from "../../provider/logic/operations";

const KEY = "operations-test-key-customer";
const TESTING_KEY = "operations-test-key-testing";
const RO_KEY = "operations-test-key-readonly";
let server: FakeServer;
let api: UserGroupsClient;
let roApi: UserGroupsClient;
const noWait = { clock: clockWith({ sleep: async () => {}, random: () => 0 }) };

/** The requests sent since `mark`, as "METHOD status". */
const requestsSince = (mark: number) => server.journal().slice(mark).map((e) => `${e.method} ${e.status}`);

const acme: CheckedInputs = { name: "Acme", userGroupId: "acme", mapping: { sales: "eu" }, properties: { seats: 40 }, adoptExisting: false };

beforeAll(async () => {
  server = await startFakeServer({
    apiKeys: [
      { key: KEY, environment: "Customer" },
      { key: TESTING_KEY, environment: "Testing" },
      { key: RO_KEY, environment: "Customer", readOnly: true },
    ],
  });
  api = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, ...noWait });
  roApi = new UserGroupsClient({ baseUrl: server.url, apiKey: RO_KEY, ...noWait });
});
afterEach(async () => {
  await server.reset();
});
afterAll(async () => {
  await api.close();
  await roApi.close();
  await server.close();
});

describe("createUserGroup", () => {
  it("creates the declared group and reports its environment", async () => {
    const outputs = await createUserGroup(api, acme);
    expect(outputs).toMatchObject({ ...acme, teamId: expect.any(Number), providedId: "acme", apiEnvironmentTag: "Customer" });
    expect(server.groups()).toEqual([
      expect.objectContaining({ environment: "Customer", user_group_id: "acme", name: "Acme", mapping: { sales: "eu" }, properties: { seats: 40 }, token: outputs.token }),
    ]);
  });

  it("refuses an existing group without changing it, saying where and how to adopt", async () => {
    const other = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, ...noWait });
    await other.getOrCreate({ name: "Theirs", user_group_id: "acme", properties: { owner: "them" } });
    const before = server.groups();
    const error = await createUserGroup(api, acme).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserGroupExistsError);
    expect((error as Error).message).toMatch(/userGroupId "acme" already exists in the Customer environment/);
    expect((error as Error).message).toMatch(/adoptExisting: true/);
    expect(server.groups()).toEqual(before);
    await other.close();
  });

  it("adopts an existing group and brings it to the declared fields, keeping its token", async () => {
    const { response } = await api.getOrCreate({ name: "Theirs", user_group_id: "acme", mapping: { old: "x" } });
    const outputs = await createUserGroup(api, { ...acme, adoptExisting: true });
    expect(outputs.token).toBe(response.user_group.token);
    expect(server.groups()[0]).toMatchObject({ name: "Acme", mapping: { sales: "eu" }, properties: { seats: 40 } });
  });

  it("recognises its own group when the create answer was lost", async () => {
    server.setFaults([{ method: "GET", action: "drop-after-apply", times: 1 }]);
    const outputs = await createUserGroup(api, acme);
    expect(server.groups()).toHaveLength(1);
    expect(server.groups()[0]?.token).toBe(outputs.token);
  });

  it("keeps the same id apart in the two environments", async () => {
    const testing = new UserGroupsClient({ baseUrl: server.url, apiKey: TESTING_KEY, ...noWait });
    const customer = await createUserGroup(api, acme);
    const test = await createUserGroup(testing, acme);
    expect([customer.apiEnvironmentTag, test.apiEnvironmentTag]).toEqual(["Customer", "Testing"]);
    expect(customer.token).not.toBe(test.token);
    await testing.close();
  });
});

describe("readUserGroup", () => {
  it("sees an out-of-band rename, properties change and rotation", async () => {
    const outputs = await createUserGroup(api, acme);
    await api.update({ user_group_id: "acme", name: "Renamed", properties: { seats: 1 } });
    const rotated = await api.rotateToken(outputs.token);
    const read = await readUserGroup(api, outputs);
    expect(read).toMatchObject({
      found: true,
      outputs: { name: "Renamed", properties: { seats: 1 }, token: rotated.user_group.token, mapping: { sales: "eu" } },
      inputs: { name: "Renamed", properties: { seats: 1 }, mapping: { sales: "eu" } },
    });
  });

  it("returns exactly the old inputs when nothing changed", async () => {
    const outputs = await createUserGroup(api, acme);
    const read = await readUserGroup(api, outputs);
    expect(read.found && read.inputs).toEqual(acme);
    expect(read.found && read.outputs).toEqual(outputs);
  });

  it("reports a vanished group as gone with one PUT: nothing created or deleted, not even for a moment (R5)", async () => {
    const outputs = await createUserGroup(api, acme);
    await api.delete({ current_token: outputs.token });
    const mark = server.journal().length;
    expect(await readUserGroup(api, outputs)).toEqual({ found: false });
    expect(requestsSince(mark)).toEqual(["PUT 404"]);
    expect(server.journal().slice(mark)[0]?.body).toEqual({ user_group_id: "acme" });
    expect(server.groups()).toEqual([]);
  });

  it("reads an existing group with a PUT that carries only its id and changes nothing", async () => {
    const outputs = await createUserGroup(api, acme);
    const before = server.groups();
    const mark = server.journal().length;
    expect((await readUserGroup(api, outputs)).found).toBe(true);
    expect(requestsSince(mark)).toEqual(["PUT 200"]);
    expect(server.groups()).toEqual(before);
  });

  it("with a read-only key: learns it from the PUT's 403, reads with GET, and a vanished group is gone with no create", async () => {
    const ro = new UserGroupsClient({ baseUrl: server.url, apiKey: RO_KEY, ...noWait });
    const outputs = await createUserGroup(api, acme);
    let mark = server.journal().length;
    expect((await readUserGroup(ro, outputs)).found).toBe(true);
    expect(requestsSince(mark)).toEqual(["PUT 403", "GET 200"]);
    expect(ro.keyIsReadOnly).toBe(true);
    await api.delete({ current_token: outputs.token });
    mark = server.journal().length;
    expect(await readUserGroup(ro, outputs)).toEqual({ found: false });
    // The client knows its key now: straight to GET, which a read-only key cannot turn into a create.
    expect(requestsSince(mark)).toEqual(["GET 403"]);
    expect(server.groups()).toEqual([]);
    await ro.close();
  });

  it("with a fresh read-only client, a vanished group costs a refused PUT and a refused GET, nothing else", async () => {
    const outputs = await createUserGroup(api, acme);
    await api.delete({ current_token: outputs.token });
    const mark = server.journal().length;
    expect(await readUserGroup(roApi, outputs)).toEqual({ found: false });
    expect(requestsSince(mark).filter((r) => r !== "PUT 403")).toEqual(["GET 403"]);
    expect(server.groups()).toEqual([]);
  });
});

describe("updateUserGroup and rotation", () => {
  it("PUTs only what changed and keeps the token", async () => {
    const olds = await createUserGroup(api, acme);
    const news = { ...acme, name: "Acme Corp", properties: undefined };
    const outputs = await updateUserGroup(api, olds, news);
    expect(outputs.token).toBe(olds.token);
    expect(outputs).not.toHaveProperty("properties");
    expect(server.groups()[0]).toMatchObject({ name: "Acme Corp", properties: null, mapping: { sales: "eu" } });
    const puts = server.journal().filter((e) => e.method === "PUT");
    expect(puts.at(-1)?.body).toEqual({ user_group_id: "acme", name: "Acme Corp", properties: null });
  });

  it("rotates when the trigger changes", async () => {
    const olds = await createUserGroup(api, acme);
    const outputs = await updateUserGroup(api, olds, { ...acme, rotationTrigger: "2026-12" });
    expect(outputs.token).not.toBe(olds.token);
    expect(server.groups()[0]?.token).toBe(outputs.token);
  });

  it("reconciles a rotation whose answer was lost: one rotation, the server's token", async () => {
    const olds = await createUserGroup(api, acme);
    server.setFaults([{ method: "POST", action: "drop-after-apply", times: 1 }]);
    const outputs = await updateUserGroup(api, olds, { ...acme, rotationTrigger: "r2" });
    expect(outputs.token).toBe(server.groups()[0]?.token);
    expect(outputs.token).not.toBe(olds.token);
    expect(server.journal().filter((e) => e.method === "POST")).toHaveLength(1);
  });

  it("retries a rotation that failed before it was applied", async () => {
    const olds = await createUserGroup(api, acme);
    server.setFaults([{ method: "POST", action: "status", status: 502, times: 1 }]);
    const rotated = await rotateUserGroupToken(api, olds);
    expect(rotated.token).toBe(server.groups()[0]?.token);
    expect(rotated.token).not.toBe(olds.token);
    expect(server.journal().filter((e) => e.method === "POST").map((e) => e.status)).toEqual([502, 200]);
  });

  it("keeps going through a run of reset connections, pausing between rounds, and rotates exactly once", async () => {
    const olds = await createUserGroup(api, acme);
    server.setFaults([{ method: "POST", action: "reset", times: 4 }]);
    const pauses: number[] = [];
    const rotated = await rotateUserGroupToken(api, olds, { pauseBeforeRound: async (round) => void pauses.push(round) });
    expect(rotated.token).toBe(server.groups()[0]?.token);
    expect(rotated.token).not.toBe(olds.token);
    expect(pauses).toEqual([2, 3, 4, 5]);
    expect(server.journal().filter((e) => e.method === "POST" && e.status === 200)).toHaveLength(1);
  });

  it("pauses between rounds on the client's clock: capped exponential backoff with full jitter (0-200 ms, 0-400 ms, ... 0-3.2 s)", async () => {
    const olds = await createUserGroup(api, acme);
    const slept: number[] = [];
    // The clock's jitter at its top: each pause is its ceiling's (just under it).
    const timed = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, clock: clockWith({ sleep: async (ms) => void slept.push(ms), random: () => 0.999 }) });
    try {
      server.setFaults([{ method: "POST", action: "reset", times: 7 }]);
      const rotated = await rotateUserGroupToken(timed, olds);
      expect(rotated.token).toBe(server.groups()[0]?.token);
      // The client retries no POST by itself (its outcome is unknown): every pause here is rotation's, one per round.
      expect(slept).toEqual([199, 399, 799, 1598, 3196, 3196, 3196]);
    } finally {
      await timed.close();
    }
    expect([2, 3, 4, 5, 6, 7, 8].map((round) => rotationPauseMs(round, () => 0))).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });

  it("gives up after its rounds with the last error, having changed nothing", async () => {
    const olds = await createUserGroup(api, acme);
    server.setFaults([{ method: "POST", action: "reset" }]);
    const error = await rotateUserGroupToken(api, olds, { maxRounds: 3, pauseBeforeRound: async () => {} }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/Create User \(rotate token\).*no answer.*ECONNRESET/);
    expect(server.groups()[0]?.token).toBe(olds.token);
    server.clearFaults();
  });

  it("by default gives itself as many rounds as the client has attempts (USER_GROUPS_MAX_ATTEMPTS)", async () => {
    const olds = await createUserGroup(api, acme);
    const patient = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY, retry: { maxAttempts: 4 }, ...noWait });
    server.setFaults([{ method: "POST", action: "reset" }]);
    const error = await rotateUserGroupToken(patient, olds, { pauseBeforeRound: async () => {} }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/ECONNRESET/);
    expect(server.journal().filter((e) => e.method === "POST")).toHaveLength(4);
    server.clearFaults();
    // The default client's budget (8) outlasts seven failed POSTs in a row.
    server.setFaults([{ method: "POST", action: "reset", times: 7 }]);
    const rotated = await rotateUserGroupToken(api, olds, { pauseBeforeRound: async () => {} });
    expect(rotated.token).toBe(server.groups()[0]?.token);
    expect(rotated.token).not.toBe(olds.token);
  });

  it("a rotation of a group deleted out of band fails and leaves it deleted (the lookup creates nothing)", async () => {
    const olds = await createUserGroup(api, acme);
    await api.delete({ current_token: olds.token });
    const mark = server.journal().length;
    await expect(rotateUserGroupToken(api, olds, { maxRounds: 1 })).rejects.toThrow(/no longer exists on the server/);
    expect(requestsSince(mark)).toEqual(["POST 404", "PUT 404"]);
    expect(server.groups()).toEqual([]);
  });

  it("rotates the current token when the stored one is stale", async () => {
    const olds = await createUserGroup(api, acme);
    const outOfBand = await api.rotateToken(olds.token);
    const rotated = await rotateUserGroupToken(api, olds);
    expect(rotated.token).not.toBe(outOfBand.user_group.token);
    expect(rotated.token).toBe(server.groups()[0]?.token);
  });
});

describe("deleteUserGroup", () => {
  it("deletes by token", async () => {
    const outputs = await createUserGroup(api, acme);
    await deleteUserGroup(api, outputs);
    expect(server.groups()).toEqual([]);
  });

  it("finds the current token when the stored one is stale", async () => {
    const outputs = await createUserGroup(api, acme);
    await api.rotateToken(outputs.token);
    await deleteUserGroup(api, outputs);
    expect(server.groups()).toEqual([]);
  });

  it("succeeds when the group is already gone, looking it up without creating it (R5)", async () => {
    const outputs = await createUserGroup(api, acme);
    await api.delete({ current_token: outputs.token });
    const mark = server.journal().length;
    await deleteUserGroup(api, outputs);
    expect(requestsSince(mark)).toEqual(["DELETE 404", "PUT 404"]);
    expect(server.groups()).toEqual([]);
  });

  it("succeeds when its answer was lost", async () => {
    const outputs = await createUserGroup(api, acme);
    server.setFaults([{ method: "DELETE", action: "drop-after-apply", times: 1 }]);
    await deleteUserGroup(api, outputs);
    expect(server.groups()).toEqual([]);
  });
});
