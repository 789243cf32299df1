// W4 (fields), W5 (GET get-or-create), W6 (PUT), W7 (POST rotate), W8 (DELETE),
// W9 (environments), W10 (tokens and team ids).
import { describe, expect, it } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { KEYS, call, createGroup, expectError, expectOk, useSharedServer } from "./helpers.js";

let server: FakeServer;
useSharedServer((started) => (server = started));

describe("W4 field rules", () => {
  const long = "x".repeat(256);
  it.each([
    ["name missing", { user_group_id: "a" }, "invalid_name"],
    ["name not a string", { name: 7, user_group_id: "a" }, "invalid_name"],
    ["name empty", { name: "", user_group_id: "a" }, "invalid_name"],
    ["name blank", { name: "  \t ", user_group_id: "a" }, "invalid_name"],
    ["name 256 chars", { name: long, user_group_id: "a" }, "invalid_name"],
    ["id missing", { name: "A" }, "invalid_user_group_id"],
    ["id a number", { name: "A", user_group_id: 1 }, "invalid_user_group_id"],
    ["id empty", { name: "A", user_group_id: "" }, "invalid_user_group_id"],
    ["id 256 chars", { name: "A", user_group_id: long }, "invalid_user_group_id"],
    ["mapping an array", { name: "A", user_group_id: "a", mapping: ["x"] }, "invalid_mapping"],
    ["mapping with a number value", { name: "A", user_group_id: "a", mapping: { s: 1 } }, "invalid_mapping"],
    ["mapping null", { name: "A", user_group_id: "a", mapping: null }, "invalid_mapping"],
    [
      "mapping with 257 keys",
      { name: "A", user_group_id: "a", mapping: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, "v"])) },
      "invalid_mapping",
    ],
    ["properties an array", { name: "A", user_group_id: "a", properties: [1] }, "invalid_properties"],
    ["properties a string", { name: "A", user_group_id: "a", properties: "x" }, "invalid_properties"],
  ])("GET with %s -> 400 %s, nothing created", async (_label, body, code) => {
    expectError(await call(server, "GET", body), 400, code);
    expect(server.groups()).toEqual([]);
  });

  it("limits count characters, not bytes: 255 emoji are a valid name and id", async () => {
    const emoji = "😀".repeat(255);
    const got = expectOk(await call(server, "GET", { name: emoji, user_group_id: emoji }), "GET");
    expect(got.user_group.name).toBe(emoji);
    expect(got.user_group.provided_id).toBe(emoji);
  });

  it("256 mapping keys are fine", async () => {
    const mapping = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, "v"]));
    expectOk(await call(server, "GET", { name: "A", user_group_id: "a", mapping }), "GET");
    expect(Object.keys(server.groups()[0]?.mapping ?? {})).toHaveLength(256);
  });

  it("PUT, POST and DELETE name their bad fields", async () => {
    expectError(await call(server, "PUT", { name: "A" }), 400, "invalid_user_group_id");
    expectError(await call(server, "PUT", { user_group_id: "a", properties: 3 }), 400, "invalid_properties");
    expectError(await call(server, "POST", {}), 400, "invalid_current_token");
    expectError(await call(server, "POST", { current_token: 5 }), 400, "invalid_current_token");
    expectError(await call(server, "DELETE", { current_token: null }), 400, "invalid_current_token");
    expectError(await call(server, "DELETE", { current_token: "t", data_source_provided_id: 9 }), 400, "invalid_data_source_provided_id");
    expectError(await call(server, "DELETE", { current_token: "t", user_group_id: "" }), 400, "invalid_user_group_id");
  });

  it("user_group_id is case-sensitive", async () => {
    await createGroup(server, "Acme");
    const got = expectOk(await call(server, "GET", { name: "A", user_group_id: "acme" }), "GET");
    expect(got.new_user_group).toBe(true);
    expect(server.groups()).toHaveLength(2);
  });
});

describe("W5 GET get-or-create", () => {
  it("creates with defaults: mapping {}, properties null, fresh token, new team_id", async () => {
    const reply = await call(server, "GET", { name: "Acme", user_group_id: "acme" });
    const got = expectOk(reply, "GET");
    expect(got.new_user_group).toBe(true);
    expect(got.user_group).toMatchObject({ name: "Acme", provided_id: "acme", properties: null });
    expect(Object.keys(got.user_group).sort()).toEqual(["name", "properties", "provided_id", "team_id", "token"]);
    expect(server.groups()).toEqual([
      {
        environment: "Customer",
        user_group_id: "acme",
        name: "Acme",
        mapping: {},
        properties: null,
        team_id: got.user_group.team_id,
        token: got.user_group.token,
      },
    ]);
  });

  it("stores mapping and properties from the body", async () => {
    const properties = { region: "eu", seats: 40, tags: ["a", { b: null }] };
    const got = expectOk(
      await call(server, "GET", { name: "Acme", user_group_id: "acme", mapping: { sales: "warehouse-eu" }, properties }),
      "GET",
    );
    expect(got.user_group.properties).toEqual(properties);
    expect(server.groups()[0]).toMatchObject({ mapping: { sales: "warehouse-eu" }, properties });
  });

  it("an existing id changes nothing and returns the stored group with new_user_group false", async () => {
    await call(server, "GET", { name: "Acme", user_group_id: "acme", mapping: { a: "b" }, properties: { x: 1 } });
    const before = server.groups();
    const got = expectOk(
      await call(server, "GET", { name: "Other", user_group_id: "acme", mapping: { c: "d" }, properties: { y: 2 } }),
      "GET",
    );
    expect(got.new_user_group).toBe(false);
    expect(got.user_group).toEqual({
      team_id: before[0]?.team_id,
      token: before[0]?.token,
      name: "Acme",
      provided_id: "acme",
      properties: { x: 1 },
    });
    expect(server.groups()).toEqual(before);
  });

  it("50 concurrent GETs of one new id create exactly one group", async () => {
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call(server, "GET", { name: `Racer ${i}`, user_group_id: "race" })),
    );
    const bodies = replies.map((r) => expectOk(r, "GET"));
    expect(bodies.filter((b) => b.new_user_group)).toHaveLength(1);
    expect(new Set(bodies.map((b) => b.user_group.token)).size).toBe(1);
    expect(new Set(bodies.map((b) => b.user_group.team_id)).size).toBe(1);
    expect(server.groups()).toHaveLength(1);
  });
});

describe("W6 PUT update", () => {
  it("replaces the fields present; the token and team_id do not change", async () => {
    const { token, team_id } = await createGroup(server, "acme", { mapping: { a: "b" }, properties: { x: 1 } });
    const got = expectOk(await call(server, "PUT", { user_group_id: "acme", name: "Renamed" }), "PUT");
    expect(got.user_group).toEqual({
      team_id,
      token,
      name: "Renamed",
      provided_id: "acme",
      properties: { x: 1 },
      api_environment_tag: "Customer",
    });
    expect(got).not.toHaveProperty("new_user_group");
    expect(server.groups()[0]).toMatchObject({ name: "Renamed", mapping: { a: "b" }, properties: { x: 1 }, token });

    expectOk(await call(server, "PUT", { user_group_id: "acme", mapping: { c: "d" }, properties: { y: [2] } }), "PUT");
    expect(server.groups()[0]).toMatchObject({ name: "Renamed", mapping: { c: "d" }, properties: { y: [2] } });
  });

  it("properties null clears them", async () => {
    await createGroup(server, "acme", { properties: { x: 1 } });
    const got = expectOk(await call(server, "PUT", { user_group_id: "acme", properties: null }), "PUT");
    expect(got.user_group.properties).toBeNull();
    expect(server.groups()[0]?.properties).toBeNull();
  });

  it("an unknown id is 404 user_group_not_found and creates nothing", async () => {
    expectError(await call(server, "PUT", { user_group_id: "ghost", name: "G" }), 404, "user_group_not_found");
    expect(server.groups()).toEqual([]);
  });

  it("a bad field changes nothing, even when other fields are fine", async () => {
    await createGroup(server, "acme");
    const before = server.groups();
    expectError(await call(server, "PUT", { user_group_id: "acme", name: "OK", mapping: { a: 1 } }), 400, "invalid_mapping");
    expect(server.groups()).toEqual(before);
  });
});

describe("W7 POST rotate", () => {
  it("issues a new token; the old one stops working at once", async () => {
    const { token, team_id } = await createGroup(server, "acme");
    const got = expectOk(await call(server, "POST", { current_token: token }), "POST");
    expect(got.user_group).toEqual({
      team_id,
      token: got.user_group.token,
      name: "Group acme",
      provided_id: "acme",
      api_environment_tag: "Customer",
    });
    expect(got.user_group.token).not.toBe(token);
    expect(got.user_group.token).toMatch(/^[0-9a-f]{64}$/);
    expect(server.groups()[0]?.token).toBe(got.user_group.token);
    expectError(await call(server, "POST", { current_token: token }), 404, "user_group_not_found");
    expectError(await call(server, "DELETE", { current_token: token }), 404, "user_group_not_found");
    // The new token works.
    expectOk(await call(server, "POST", { current_token: got.user_group.token }), "POST");
  });

  it("GET returns the rotated token", async () => {
    const { token } = await createGroup(server, "acme");
    const rotated = expectOk(await call(server, "POST", { current_token: token }), "POST").user_group.token;
    expect(expectOk(await call(server, "GET", { name: "x", user_group_id: "acme" }), "GET").user_group.token).toBe(rotated);
  });

  it("an unknown token is 404", async () => {
    expectError(await call(server, "POST", { current_token: "f".repeat(64) }), 404, "user_group_not_found");
    expectError(await call(server, "POST", { current_token: "" }), 404, "user_group_not_found");
  });
});

describe("W8 DELETE", () => {
  it("deletes by current_token and answers exactly {success: 1}", async () => {
    const { token } = await createGroup(server, "acme");
    const reply = await call(server, "DELETE", { current_token: token });
    expectOk(reply, "DELETE");
    expect(reply.json).toEqual({ success: 1 });
    expect(server.groups()).toEqual([]);
    expectError(await call(server, "DELETE", { current_token: token }), 404, "user_group_not_found");
  });

  it.each([
    ["user_group_id", { user_group_id: "acme" }],
    ["data_source_provided_id", { data_source_provided_id: "acme" }],
    ["both", { user_group_id: "acme", data_source_provided_id: "acme" }],
  ])("accepts a matching %s", async (_label, ids) => {
    const { token } = await createGroup(server, "acme");
    expectOk(await call(server, "DELETE", { current_token: token, ...ids }), "DELETE");
    expect(server.groups()).toEqual([]);
  });

  it.each([
    ["user_group_id", { user_group_id: "other" }],
    ["data_source_provided_id", { data_source_provided_id: "other" }],
    ["one of two", { user_group_id: "acme", data_source_provided_id: "ACME" }],
  ])("a mismatching %s is 409 id_mismatch and nothing is deleted", async (_label, ids) => {
    const { token } = await createGroup(server, "acme");
    const before = server.groups();
    expectError(await call(server, "DELETE", { current_token: token, ...ids }), 409, "id_mismatch");
    expect(server.groups()).toEqual(before);
  });

  it("an unknown token is 404 even when the id exists", async () => {
    await createGroup(server, "acme");
    expectError(await call(server, "DELETE", { current_token: "0".repeat(64), user_group_id: "acme" }), 404, "user_group_not_found");
    expect(server.groups()).toHaveLength(1);
  });

  it("a deleted id can be created again, with a new token and team_id", async () => {
    const first = await createGroup(server, "acme");
    await call(server, "DELETE", { current_token: first.token });
    const second = await createGroup(server, "acme");
    expect(second.token).not.toBe(first.token);
    expect(second.team_id).not.toBe(first.team_id);
  });
});

describe("W9 environments", () => {
  it("the same id exists once per environment, independently", async () => {
    const customer = await createGroup(server, "acme", {}, KEYS.customer);
    const testing = await createGroup(server, "acme", {}, KEYS.testing);
    expect(testing.token).not.toBe(customer.token);
    expect(testing.team_id).not.toBe(customer.team_id);
    expect(
      server
        .groups()
        .map((g) => g.environment)
        .sort(),
    ).toEqual(["Customer", "Testing"]);
    const put = expectOk(await call(server, "PUT", { user_group_id: "acme", name: "T" }, { key: KEYS.testing }), "PUT");
    expect(put.user_group.api_environment_tag).toBe("Testing");
    expect(server.groups().find((g) => g.environment === "Customer")?.name).toBe("Group acme");
  });

  it("another environment's groups are 404, never 403, and stay untouched", async () => {
    const { token } = await createGroup(server, "acme", {}, KEYS.customer);
    const before = server.groups();
    expectError(await call(server, "PUT", { user_group_id: "acme", name: "X" }, { key: KEYS.testing }), 404, "user_group_not_found");
    expectError(await call(server, "POST", { current_token: token }, { key: KEYS.testing }), 404, "user_group_not_found");
    expectError(await call(server, "DELETE", { current_token: token }, { key: KEYS.testing }), 404, "user_group_not_found");
    // A read-only Testing key sees no Customer group either: the GET would create, so 403 — about its own environment.
    expectError(await call(server, "GET", { name: "x", user_group_id: "acme" }, { key: KEYS.testingRo }), 403, "forbidden");
    expect(server.groups()).toEqual(before);
  });

  it("the read-only key of one environment reads its own groups only", async () => {
    await createGroup(server, "acme", {}, KEYS.testing);
    const got = expectOk(await call(server, "GET", { name: "x", user_group_id: "acme" }, { key: KEYS.testingRo }), "GET");
    expect(got.new_user_group).toBe(false);
    expectError(await call(server, "GET", { name: "x", user_group_id: "acme" }, { key: KEYS.customerRo }), 403, "forbidden");
  });
});

describe("W10 tokens and team ids", () => {
  it("tokens are 64 lowercase hex and unique; team ids are positive, unique integers", async () => {
    const made = await Promise.all(Array.from({ length: 40 }, (_, i) => createGroup(server, `g${i}`)));
    for (const m of made) {
      expect(m.token).toMatch(/^[0-9a-f]{64}$/);
      expect(Number.isInteger(m.team_id) && m.team_id > 0).toBe(true);
    }
    expect(new Set(made.map((m) => m.token)).size).toBe(40);
    expect(new Set(made.map((m) => m.team_id)).size).toBe(40);
  });

  it("team ids are not reused after a reset", async () => {
    const before = await createGroup(server, "acme");
    await server.reset();
    const after = await createGroup(server, "acme");
    expect(after.team_id).toBeGreaterThan(before.team_id);
  });
});
