// Namespaces (fake-server/namespaces.ts): many tests share one server in parallel,
// each in a namespace of its own whose groups, journal, fault rules and rate-limit
// windows no other sees, with the same wire behaviour inside each.
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeServer, type FakeServer, type FakeServerNamespace } from "../../fake-server/index.js";
import { call, expectError, expectOk } from "./helpers.js";

const SERVER_KEY = "namespaces-own-key-0001";
let server: FakeServer;
beforeAll(async () => {
  // A small rate limit: each namespace must have windows of its own.
  server = await startFakeServer({ apiKeys: [{ key: SERVER_KEY, environment: "Customer" }], rateLimit: { requests: 12, windowSeconds: 600 } });
});
afterAll(async () => {
  await server.close();
});

const TESTS = Array.from({ length: 20 }, (_, i) => i);

describe.concurrent("20 tests in parallel on one server, a namespace each", () => {
  it.each(TESTS)("test %i sees only its own groups, journal, faults and rate window", async (i) => {
    using ns = server.namespace();
    const key = ns.key;
    // The same id in every namespace: each creates its own group, with the first team id.
    const created = expectOk(await call(server, "GET", { name: `Group ${i}`, user_group_id: "acme" }, { key }), "GET");
    expect(created.new_user_group).toBe(true);
    expect(created.user_group.team_id).toBe(1);
    expect(created.user_group.name).toBe(`Group ${i}`);
    // Fault rules of this namespace only: every other test's PUT still succeeds.
    ns.setFaults([{ method: "PUT", action: "status", status: 503, times: 1 }]);
    expectError(await call(server, "PUT", { user_group_id: "acme", name: "x" }, { key }), 503, "injected_fault");
    expectOk(await call(server, "PUT", { user_group_id: "acme", name: `Renamed ${i}` }, { key }), "PUT");
    // Rotation and deletion by token work inside the namespace.
    const rotated = expectOk(await call(server, "POST", { current_token: created.user_group.token }, { key }), "POST");
    expect(rotated.user_group.api_environment_tag).toBe("Customer");
    expect(ns.groups()).toEqual([expect.objectContaining({ user_group_id: "acme", name: `Renamed ${i}`, team_id: 1 })]);
    const journal = ns.journal();
    expect(journal.map((e) => `${e.method} ${e.status} ${e.userGroupId}`)).toEqual(["GET 200 acme", "PUT 503 acme", "PUT 200 acme", "POST 200 acme"]);
    expect(JSON.stringify(journal)).not.toContain(key);
    // Its rate window: 12 requests, 4 used; the 13th of this namespace is refused, others' are not.
    for (let n = 0; n < 8; n++) expect((await call(server, "PUT", { user_group_id: "acme" }, { key })).status).toBe(200);
    expectError(await call(server, "PUT", { user_group_id: "acme" }, { key }), 429, "rate_limited");
  });
});

describe("namespaces", () => {
  let a: FakeServerNamespace;
  let b: FakeServerNamespace;
  beforeAll(() => {
    a = server.namespace();
    b = server.namespace();
  });
  afterAll(() => {
    a.close();
    b.close();
  });

  it("a namespace's group is unknown to another namespace and to the server's own keys (404, as another environment)", async () => {
    const group = expectOk(await call(server, "GET", { name: "Only A", user_group_id: "only-a" }, { key: a.key }), "GET");
    expectError(await call(server, "PUT", { user_group_id: "only-a" }, { key: b.key }), 404, "user_group_not_found");
    expectError(await call(server, "DELETE", { current_token: group.user_group.token }, { key: b.key }), 404, "user_group_not_found");
    expectError(await call(server, "PUT", { user_group_id: "only-a" }, { key: SERVER_KEY }), 404, "user_group_not_found");
    expect(server.groups()).toEqual([]);
    expect(b.groups()).toEqual([]);
    expect(server.journal().map((e) => e.userGroupId)).toEqual(["only-a"]);
    expect(b.journal()).toHaveLength(2);
  });

  it("keeps the contract's keys inside: four keys by default, read-only ones refused writes, Testing its own environment", async () => {
    expect(a.apiKeys.map((k) => `${k.environment}${k.readOnly ? ":ro" : ""}`)).toEqual(["Customer", "Customer:ro", "Testing", "Testing:ro"]);
    const [, customerRo, testing] = a.apiKeys;
    expectError(await call(server, "GET", { name: "New", user_group_id: "ro-new" }, { key: customerRo!.key }), 403, "forbidden");
    const t = expectOk(await call(server, "GET", { name: "T", user_group_id: "only-a" }, { key: testing!.key }), "GET");
    expect(t.new_user_group).toBe(true);
  });

  it("server.reset() leaves namespaces alone; namespace.reset() empties only its own", async () => {
    const c = server.namespace();
    expectOk(await call(server, "GET", { name: "C", user_group_id: "c" }, { key: c.key }), "GET");
    await server.reset();
    expect(c.groups()).toHaveLength(1);
    a.reset();
    expect(a.groups()).toEqual([]);
    expect(c.groups()).toHaveLength(1);
    c.close();
  });

  it("a closed namespace's keys are refused with 401, on a kept-alive connection too", async () => {
    const c = server.namespace();
    expectOk(await call(server, "GET", { name: "C", user_group_id: "c" }, { key: c.key }), "GET");
    c.close();
    c.close();
    expectError(await call(server, "GET", { name: "C", user_group_id: "c" }, { key: c.key }), 401, "unauthorized");
  });

  it("seeds per namespace: fixed token and team id in one namespace only", async () => {
    const token = "ab".repeat(32);
    using c = server.namespace({ seed: [{ user_group_id: "seeded", name: "Seeded", team_id: 4242, token }] });
    const got = expectOk(await call(server, "GET", { name: "ignored", user_group_id: "seeded" }, { key: c.key }), "GET");
    expect(got).toMatchObject({ new_user_group: false, user_group: { team_id: 4242, token, name: "Seeded" } });
    expect(a.groups().some((g) => g.user_group_id === "seeded")).toBe(false);
  });

  it("is refused past maxNamespaces", async () => {
    const small = await startFakeServer({ apiKeys: [{ key: SERVER_KEY, environment: "Customer" }], maxNamespaces: 2 });
    try {
      small.namespace();
      const second = small.namespace();
      expect(() => small.namespace()).toThrow(/holds 2 namespaces already/);
      second.close();
      expect(small.namespace().id).toMatch(/^ns-[0-9a-f]{12}$/);
    } finally {
      await small.close();
    }
  });
});

describe("namespaces over the admin API (a server in another process)", () => {
  async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await request(`${server.url}/__admin/${path}`, {
      method: method as "GET",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  }

  it("POST /__admin/namespaces makes one; its groups, requests, faults, seed and reset are under /__admin/namespaces/<id>/; DELETE ends it", async () => {
    const made = await admin("POST", "namespaces", { keys: [{ environment: "Testing" }], seed: [{ user_group_id: "s1", name: "S1", environment: "Testing" }] });
    expect(made.status).toBe(200);
    const ns = made.json["namespace"] as { id: string; apiKeys: Array<{ key: string; environment: string; readOnly: boolean }> };
    expect(ns.apiKeys).toEqual([{ key: expect.any(String), environment: "Testing", readOnly: false }]);
    const key = ns.apiKeys[0]!.key;
    expect((await admin("GET", "namespaces")).json["namespaces"]).toContain(ns.id);
    expect((await admin("GET", `namespaces/${ns.id}/groups`)).json["groups"]).toEqual([expect.objectContaining({ user_group_id: "s1", environment: "Testing" })]);
    expect((await admin("POST", `namespaces/${ns.id}/faults`, { rules: [{ method: "GET", action: "status", status: 500, times: 1 }] })).status).toBe(200);
    expectError(await call(server, "GET", { name: "S1", user_group_id: "s1" }, { key }), 500, "injected_fault");
    expect((await admin("POST", `namespaces/${ns.id}/seed`, { groups: [{ user_group_id: "s2", name: "S2", environment: "Testing" }] })).status).toBe(200);
    const requests = (await admin("GET", `namespaces/${ns.id}/requests`)).json["requests"] as Array<{ status: number }>;
    expect(requests.map((r) => r.status)).toEqual([500]);
    expect((await admin("POST", `namespaces/${ns.id}/reset`)).status).toBe(200);
    expect((await admin("GET", `namespaces/${ns.id}/groups`)).json["groups"]).toEqual([]);
    expect((await admin("DELETE", `namespaces/${ns.id}`)).status).toBe(200);
    expect((await admin("GET", `namespaces/${ns.id}/groups`)).status).toBe(404);
    expectError(await call(server, "GET", { name: "S1", user_group_id: "s1" }, { key }), 401, "unauthorized");
  });

  it("refuses a malformed or unknown namespace id, and a bad request to make one, without making any", async () => {
    const before = (await admin("GET", "namespaces")).json["namespaces"];
    for (const path of ["namespaces/ns-zzzzzzzzzzzz/groups", "namespaces/..%2Freset/groups", "namespaces/__proto__/groups", "namespaces/ns-000000000000"]) {
      expect((await admin("GET", path)).status, path).toBe(404);
    }
    const bad = await admin("POST", "namespaces", { keys: [{ environment: "Production" }] });
    expect(bad.status).toBe(400);
    const badSeed = await admin("POST", "namespaces", { seed: [{ user_group_id: "x", name: "X", token: "not-a-token-secret-value" }] });
    expect(badSeed.status).toBe(400);
    expect(JSON.stringify(badSeed.json)).not.toContain("not-a-token-secret-value");
    expect((await admin("GET", "namespaces")).json["namespaces"]).toEqual(before);
  });
});
