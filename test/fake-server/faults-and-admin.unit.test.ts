// Fault rules (each action, times, probability, user_group_id matching) and the
// /__admin/ endpoints, including the admin token and the loopback rule.
import { request } from "undici";
import { describe, expect, it } from "vitest";
import { startFakeServer, type FakeServer } from "../../fake-server/index.js";
import { KEYS, call, createGroup, expectError, expectOk, start, type Reply, useSharedServer } from "./helpers.js";

let server: FakeServer;
useSharedServer((started) => (server = started));

async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, target = server): Promise<Reply> {
  const res = await request(`${target.url}/__admin/${path}`, {
    method: method as "GET",
    // Admin POSTs must be JSON (a browser form cannot send that cross-origin).
    headers: body === undefined && method !== "POST" ? headers : { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) as unknown };
}

/** A call that must fail at the connection level (no HTTP answer). */
async function callExpectingNoAnswer(method: string, body: unknown): Promise<void> {
  const outcome = await call(server, method, body).then(
    (reply) => `answered ${reply.status}`,
    (error: unknown) => `error ${(error as Error).name}`,
  );
  expect(outcome).toMatch(/^error /);
}

describe("fault actions", () => {
  it("status answers the injected status with Retry-After and touches nothing", async () => {
    await admin("POST", "faults", { rules: [{ method: "GET", action: "status", status: 503, retryAfter: 2, times: 1 }] });
    const reply = await call(server, "GET", { name: "A", user_group_id: "a" });
    expectError(reply, 503, "injected_fault");
    expect(reply.headers["retry-after"]).toBe("2");
    expect(server.groups()).toEqual([]);
    expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
  });

  it("status can be a 2xx whose body still says success 0", async () => {
    server.setFaults([{ method: "PUT", action: "status", status: 200 }]);
    const reply = await call(server, "PUT", { user_group_id: "a" });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ success: 0, error: { code: "injected_fault" } });
  });

  it("delay waits, then handles the request normally", async () => {
    server.setFaults([{ method: "GET", action: "delay", delayMs: 300 }]);
    const started = Date.now();
    const got = expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(got.new_user_group).toBe(true);
  });

  it("reset drops the connection before handling: no answer, no change", async () => {
    server.setFaults([{ method: "GET", action: "reset", times: 1 }]);
    await callExpectingNoAnswer("GET", { name: "A", user_group_id: "a" });
    expect(server.groups()).toEqual([]);
    expect(server.journal().at(-1)).toMatchObject({ method: "GET", status: null, fault: "reset" });
    expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
  });

  it("drop-after-apply carries the rotation out and then loses the answer", async () => {
    const { token } = await createGroup(server, "acme");
    server.setFaults([{ method: "POST", action: "drop-after-apply", times: 1 }]);
    await callExpectingNoAnswer("POST", { current_token: token });
    const stored = server.groups()[0]?.token;
    expect(stored).not.toBe(token);
    expectError(await call(server, "POST", { current_token: token }), 404, "user_group_not_found");
    // The client can recover the new token by reading the group back.
    expect(expectOk(await call(server, "GET", { name: "x", user_group_id: "acme" }), "GET").user_group.token).toBe(stored);
  });

  it("drop-after-apply drops the answer of a failing operation too", async () => {
    server.setFaults([{ method: "DELETE", action: "drop-after-apply", times: 1 }]);
    await callExpectingNoAnswer("DELETE", { current_token: "f".repeat(64) });
    expect(server.journal().at(-1)).toMatchObject({ method: "DELETE", status: null, fault: "drop-after-apply" });
  });

  it("drop-after-apply on GET creates the group without answering", async () => {
    server.setFaults([{ method: "GET", action: "drop-after-apply", times: 1 }]);
    await callExpectingNoAnswer("GET", { name: "A", user_group_id: "a" });
    expect(server.groups()).toHaveLength(1);
    expect(expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET").new_user_group).toBe(false);
  });
});

describe("fault matching", () => {
  it("times: fires for the first N matches only", async () => {
    server.setFaults([{ method: "PUT", action: "status", status: 500, times: 2 }]);
    await createGroup(server, "a");
    expectError(await call(server, "PUT", { user_group_id: "a" }), 500, "injected_fault");
    expectError(await call(server, "PUT", { user_group_id: "a" }), 500, "injected_fault");
    expectOk(await call(server, "PUT", { user_group_id: "a" }), "PUT");
    expect(server.faults()).toEqual([{ method: "PUT", action: "status", status: 500, times: 2, remaining: 0 }]);
  });

  it("no times and no probability: fires always; only for its method", async () => {
    server.setFaults([{ method: "DELETE", action: "status", status: 502 }]);
    const { token } = await createGroup(server, "a");
    for (let i = 0; i < 3; i++) expectError(await call(server, "DELETE", { current_token: token }), 502, "injected_fault");
    expectOk(await call(server, "PUT", { user_group_id: "a" }), "PUT");
    expect(server.groups()).toHaveLength(1);
  });

  it("probability 0 never fires, probability 1 always fires", async () => {
    server.setFaults([{ method: "GET", action: "status", status: 500, probability: 0 }]);
    for (let i = 0; i < 5; i++) expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
    server.setFaults([{ method: "GET", action: "status", status: 500, probability: 1 }]);
    for (let i = 0; i < 5; i++) expectError(await call(server, "GET", { name: "A", user_group_id: "a" }), 500, "injected_fault");
  });

  it("seed: the same seed fires on the same matches again; another seed differs", async () => {
    const firings = async (seed: number, via: "admin" | "helper"): Promise<string> => {
      const rule = { method: "GET", action: "status", status: 500, probability: 0.5, seed } as const;
      if (via === "admin") {
        await admin("DELETE", "faults");
        expect((await admin("POST", "faults", { rules: [rule] })).status).toBe(200);
      } else {
        server.setFaults([rule]);
      }
      let pattern = "";
      for (let i = 0; i < 24; i++) pattern += (await call(server, "GET", { name: "A", user_group_id: "a" })).status === 500 ? "x" : ".";
      return pattern;
    };
    const first = await firings(7, "admin");
    expect(first).toMatch(/x/);
    expect(first).toMatch(/\./);
    expect(await firings(7, "helper")).toBe(first);
    expect(await firings(8, "admin")).not.toBe(first);
    expect(server.faults()).toEqual([{ method: "GET", action: "status", status: 500, probability: 0.5, seed: 8 }]);
    server.clearFaults();
  });

  it("user_group_id matches the body id for GET/PUT", async () => {
    server.setFaults([{ method: "GET", user_group_id: "b", action: "status", status: 500 }]);
    expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
    expectError(await call(server, "GET", { name: "B", user_group_id: "b" }), 500, "injected_fault");
  });

  it("user_group_id matches the owner of current_token for POST/DELETE", async () => {
    const a = await createGroup(server, "a");
    const b = await createGroup(server, "b");
    server.setFaults([
      { method: "POST", user_group_id: "b", action: "status", status: 503 },
      { method: "DELETE", user_group_id: "a", action: "status", status: 503 },
    ]);
    expectOk(await call(server, "POST", { current_token: a.token }), "POST");
    expectError(await call(server, "POST", { current_token: b.token }), 503, "injected_fault");
    expectError(await call(server, "DELETE", { current_token: (server.groups().find((g) => g.user_group_id === "a"))?.token }), 503, "injected_fault");
    expectOk(await call(server, "DELETE", { current_token: b.token }), "DELETE");
  });

  it("the first matching rule wins, in the order installed; addFaults appends, setFaults replaces", async () => {
    server.setFaults([{ method: "GET", action: "status", status: 501, times: 1 }]);
    server.addFaults([{ method: "GET", action: "status", status: 502, times: 1 }]);
    expectError(await call(server, "GET", { name: "A", user_group_id: "a" }), 501, "injected_fault");
    expectError(await call(server, "GET", { name: "A", user_group_id: "a" }), 502, "injected_fault");
    server.setFaults([{ method: "GET", action: "status", status: 503, times: 1 }]);
    expect(server.faults()).toHaveLength(1);
    server.clearFaults();
    expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET");
  });

  it("faults do not bypass authentication", async () => {
    server.setFaults([{ method: "GET", action: "status", status: 500 }]);
    expectError(await call(server, "GET", { name: "A", user_group_id: "a" }, { key: null }), 401, "unauthorized");
  });
});

describe("admin endpoints", () => {
  it("POST /__admin/faults appends validated rules, GET lists them, DELETE clears them", async () => {
    const rules = [
      { method: "GET", action: "delay", delayMs: 1 },
      { method: "PUT", user_group_id: "x", action: "status", status: 429, retryAfter: 1, times: 3 },
    ];
    expect((await admin("POST", "faults", { rules: rules.slice(0, 1) })).status).toBe(200);
    expect((await admin("POST", "faults", { rules: rules.slice(1) })).json).toMatchObject({ success: 1, rules: [rules[0], rules[1]] });
    expect((await admin("GET", "faults")).json).toMatchObject({ success: 1, rules });
    expect((await admin("DELETE", "faults")).json).toEqual({ success: 1 });
    expect(server.faults()).toEqual([]);
  });

  it.each([
    ["no rules field", {}],
    ["unknown method", { rules: [{ method: "PATCH", action: "reset" }] }],
    ["unknown action", { rules: [{ method: "GET", action: "explode" }] }],
    ["status without status", { rules: [{ method: "GET", action: "status" }] }],
    ["delay without delayMs", { rules: [{ method: "GET", action: "delay" }] }],
    ["probability above 1", { rules: [{ method: "GET", action: "reset", probability: 2 }] }],
    ["times 0", { rules: [{ method: "GET", action: "reset", times: 0 }] }],
    ["negative seed", { rules: [{ method: "GET", action: "reset", probability: 0.5, seed: -1 }] }],
    ["seed above 32 bits", { rules: [{ method: "GET", action: "reset", probability: 0.5, seed: 2 ** 32 }] }],
    ["misspelt field", { rules: [{ method: "GET", action: "reset", time: 1 }] }],
  ])("a bad fault body (%s) is 400 and installs nothing", async (_label, body) => {
    const reply = await admin("POST", "faults", body);
    expectError(reply, 400, "invalid_body");
    expect(server.faults()).toEqual([]);
  });

  it("GET /__admin/groups lists every group of both environments with all fields", async () => {
    const c = await createGroup(server, "acme", { mapping: { s: "d" }, properties: { p: 1 } }, KEYS.customer);
    const t = await createGroup(server, "acme", {}, KEYS.testing);
    const reply = await admin("GET", "groups");
    expect(reply.json).toEqual({
      success: 1,
      groups: [
        { environment: "Customer", user_group_id: "acme", name: "Group acme", mapping: { s: "d" }, properties: { p: 1 }, team_id: c.team_id, token: c.token },
        { environment: "Testing", user_group_id: "acme", name: "Group acme", mapping: {}, properties: null, team_id: t.team_id, token: t.token },
      ],
    });
  });

  it("POST /__admin/reset empties the state, the journal and the fault rules", async () => {
    await createGroup(server, "acme");
    server.setFaults([{ method: "PUT", action: "reset" }]);
    expect((await admin("POST", "reset")).json).toEqual({ success: 1 });
    expect(server.groups()).toEqual([]);
    expect(server.journal()).toEqual([]);
    expect(server.faults()).toEqual([]);
  });

  it("GET /__admin/requests returns the journal: method, path, status, body", async () => {
    await call(server, "GET", { name: "A", user_group_id: "a" });
    await call(server, "PUT", { user_group_id: "nope" }, { path: "/api/user/" });
    const reply = await admin("GET", "requests");
    const requests = (reply.json as { requests: unknown[] }).requests;
    expect(requests).toMatchObject([
      { method: "GET", path: "/api/user", status: 200, environment: "Customer", body: { name: "A", user_group_id: "a" } },
      { method: "PUT", path: "/api/user", status: 404, code: "user_group_not_found", body: { user_group_id: "nope" } },
    ]);
  });

  it("unknown admin paths are 404, wrong methods 405 with Allow", async () => {
    expectError(await admin("GET", "nothing"), 404, "not_found");
    const reply = await admin("GET", "reset");
    expectError(reply, 405, "method_not_allowed");
    expect(reply.headers["allow"]).toBe("POST");
  });

  it("admin endpoints need no API key on loopback, and the API still needs one", async () => {
    expect((await admin("GET", "groups")).status).toBe(200);
    expectError(await call(server, "GET", { name: "A", user_group_id: "a" }, { key: null }), 401, "unauthorized");
  });

  it("with adminToken, admin endpoints need X-Admin-Token", async () => {
    const guarded = await start({ adminToken: "admin-secret-123" });
    try {
      expectError(await admin("GET", "groups", undefined, {}, guarded), 401, "unauthorized");
      expectError(await admin("GET", "groups", undefined, { "x-admin-token": "wrong" }, guarded), 401, "unauthorized");
      expectError(await admin("POST", "reset", undefined, { "x-admin-token": "admin-secret-12" }, guarded), 401, "unauthorized");
      expect((await admin("GET", "groups", undefined, { "x-admin-token": "admin-secret-123" }, guarded)).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it("refuses to start on a non-loopback host without an admin token", async () => {
    await expect(startFakeServer({ host: "0.0.0.0", apiKeys: [{ key: KEYS.customer, environment: "Customer" }] })).rejects.toThrow(
      /non-loopback.*admin token/,
    );
  });

  it("rejects bad options with a message naming the option", async () => {
    await expect(startFakeServer({ apiKeys: [] })).rejects.toThrow(/apiKeys/);
    await expect(startFakeServer({ apiKeys: [{ key: "a b", environment: "Customer" }] })).rejects.toThrow(/apiKeys/);
    await expect(
      startFakeServer({ apiKeys: [{ key: "k", environment: "Staging" as "Customer" }] }),
    ).rejects.toThrow(/apiKeys\.0\.environment/);
    // In process, a wrong rule is worded as the admin API words it: the rule's index, then the field.
    expect(() => server.setFaults([{ method: "GET", action: "delay", delayMs: 10 }, { method: "GET", action: "status" } as never])).toThrow(
      /^fault rule 1: .*status/,
    );
  });

  it("GET /openapi.json serves the document without an API key", async () => {
    const res = await request(`${server.url}/openapi.json`);
    const doc = (await res.body.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(res.statusCode).toBe(200);
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(["/api/user"]);
  });
});
