// The contract's checks (CONTRACT.md W1–W10), runnable against any target: the
// emulator, the real service, or an emulator changed on purpose. Each check sends
// a few requests and reduces the answers to facts that never hold a token or a
// key (a status, an error code, the names of the fields, whether two tokens are
// equal); what the contract says those facts must be is written beside it. The
// same facts, recorded from a target, are a fixture (fixture.ts).
// A check marked "write" creates groups (ids from the context: prefixed, in the
// ledger before they are sent) and is left out for a read-only key; a
// "read-only" check runs only with one; "any" runs with both.
import { API_PATH, MAX_ID_CHARS, MAX_MAPPING_KEYS, MAX_NAME_CHARS } from "../wire/schemas";
import {
  authFailure,
  authFailureOn,
  type Check,
  create,
  failure,
  type FactValue,
  field400,
  fields,
  group,
  type Json,
  NOT_CREATED,
  obj,
  outcome,
  TOKEN,
  tokenOf,
  valid,
} from "./check-kit";
import { WIRE_TEST_CHECKS } from "./checks-wire-tests";

export type { Check, CheckContext, CheckMode, Facts, FactValue } from "./check-kit";


export const CHECKS: readonly Check[] = [
  // ---- W1 authentication ----
  authFailure("auth-missing", "no Authorization header: 401", () => null),
  authFailure("auth-bearer", "Bearer scheme: 401", () => "Bearer conformance-not-a-key"),
  authFailure("auth-token-without-key", "`Token` without a key: 401", () => "Token"),
  authFailure("auth-unknown-key", "an unknown key: 401", () => "Token conformance-unknown-key-0000"),
  authFailure("auth-two-words", "`Token a b`: 401", () => "Token conformance unknown"),
  // ---- W2 requests ----
  failure("media-missing", "W2", "no Content-Type: 415", "any", 415, "unsupported_media_type", async (ctx) => ctx.send("GET", await valid(ctx), { contentType: null })),
  failure("media-text", "W2", "text/plain: 415", "any", 415, "unsupported_media_type", async (ctx) => ctx.send("GET", await valid(ctx), { contentType: "text/plain" })),
  failure("body-empty", "W2", "an empty body: 400 invalid_body", "any", 400, "invalid_body", (ctx) => ctx.send("GET", undefined, { raw: "" })),
  failure("body-array", "W2", "a JSON array: 400 invalid_body", "any", 400, "invalid_body", async (ctx) => ctx.send("GET", [await valid(ctx)])),
  failure("body-string", "W2", "a JSON string: 400 invalid_body", "any", 400, "invalid_body", (ctx) => ctx.send("GET", "text")),
  failure("body-not-json", "W2", "not JSON: 400 invalid_json", "any", 400, "invalid_json", (ctx) => ctx.send("GET", undefined, { raw: "{name:" })),
  failure("body-too-large", "W2", "a body over 1 MiB: 413", "any", 413, "payload_too_large", async (ctx) =>
    ctx.send("GET", undefined, { raw: JSON.stringify({ ...(await valid(ctx)), pad: "x".repeat(1024 * 1024) }) }),
  ),
  failure("path-other", "W2", "another path: 404 not_found", "any", 404, "not_found", async (ctx) => ctx.send("GET", await valid(ctx), { path: "/api/users" })),
  failure("method-other", "W2", "PATCH: 405 with Allow", "any", 405, "method_not_allowed", async (ctx) => ctx.send("PATCH", await valid(ctx)), {
    expected: { Allow: ["DELETE", "GET", "POST", "PUT"] },
    observe: (a) => ({ Allow: String(a.headers["allow"] ?? "").split(/\s*,\s*/).filter(Boolean).sort() }),
  }),
  failure("path-trailing-slash", "W2", "`/api/user/` is the same path", "any", 400, "invalid_name", async (ctx) => ctx.send("GET", { user_group_id: await ctx.id(NOT_CREATED) }, { path: `${API_PATH}/` })),
  failure("media-charset", "W2", "a charset parameter is fine", "any", 400, "invalid_name", async (ctx) =>
    ctx.send("GET", { user_group_id: await ctx.id(NOT_CREATED) }, { contentType: "application/json; charset=utf-8" }),
  ),
  // ---- W4 fields ----
  field400("name-missing", "GET without name: 400 invalid_name", "invalid_name", (id) => ({ user_group_id: id })),
  field400("name-blank", "a blank name: 400 invalid_name", "invalid_name", (id) => ({ name: "   ", user_group_id: id })),
  field400("name-too-long", `a name of ${MAX_NAME_CHARS + 1} characters: 400`, "invalid_name", (id) => ({ name: "n".repeat(MAX_NAME_CHARS + 1), user_group_id: id })),
  field400("name-number", "a name that is a number: 400", "invalid_name", (id) => ({ name: 7, user_group_id: id })),
  field400("id-missing", "GET without user_group_id: 400", "invalid_user_group_id", () => ({ name: "N" })),
  field400("id-empty", "an empty user_group_id: 400", "invalid_user_group_id", () => ({ name: "N", user_group_id: "" })),
  field400("id-too-long", `a user_group_id of ${MAX_ID_CHARS + 1} characters: 400`, "invalid_user_group_id", () => ({ name: "N", user_group_id: "i".repeat(MAX_ID_CHARS + 1) })),
  field400("mapping-number-value", "a mapping value that is a number: 400", "invalid_mapping", (id) => ({ name: "N", user_group_id: id, mapping: { sales: 1 } })),
  field400("mapping-too-many-keys", `a mapping of ${MAX_MAPPING_KEYS + 1} keys: 400`, "invalid_mapping", (id) => ({
    name: "N",
    user_group_id: id,
    mapping: Object.fromEntries(Array.from({ length: MAX_MAPPING_KEYS + 1 }, (_, i) => [`k${i}`, "v"])),
  })),
  field400("mapping-array", "a mapping that is an array: 400", "invalid_mapping", (id) => ({ name: "N", user_group_id: id, mapping: ["a"] })),
  field400("properties-array", "properties that are an array: 400", "invalid_properties", (id) => ({ name: "N", user_group_id: id, properties: [1] })),
  field400("properties-string", "properties that are a string: 400", "invalid_properties", (id) => ({ name: "N", user_group_id: id, properties: "p" })),
  field400("mapping-proto-key", "a __proto__ key in mapping: 400 (W4, the emulator's own limit)", "invalid_mapping", (id) => JSON.parse(`{"name":"N","user_group_id":${JSON.stringify(id)},"mapping":{"__proto__":"x"}}`) as Json),
  field400("properties-too-deep", "properties nested deeper than 64: 400 (W4, the emulator's own limit)", "invalid_properties", (id) => ({
    name: "N",
    user_group_id: id,
    properties: JSON.parse(`${'{"a":'.repeat(70)}1${"}".repeat(70)}`) as Json,
  })),
  failure("properties-number-out-of-range", "W4*", "a number outside the double range: 400 (the emulator's own limit)", "any", 400, "invalid_properties", async (ctx) =>
    ctx.send("GET", undefined, { raw: `{"name":"N","user_group_id":${JSON.stringify(await ctx.id(NOT_CREATED))},"properties":{"n":1e400}}` }),
  ),
  authFailureOn("auth-missing-put", "PUT without Authorization: 401 (before a read-only refusal)", "PUT"),
  authFailureOn("auth-missing-post", "POST without Authorization: 401", "POST"),
  authFailureOn("auth-missing-delete", "DELETE without Authorization: 401", "DELETE"),
  failure("put-name-blank", "W4", "PUT with a blank name: 400", "write", 400, "invalid_name", async (ctx) => ctx.send("PUT", { user_group_id: await ctx.id(NOT_CREATED), name: " " })),
  failure("put-mapping-number-value", "W4", "PUT with a mapping value that is a number: 400", "write", 400, "invalid_mapping", async (ctx) =>
    ctx.send("PUT", { user_group_id: await ctx.id(NOT_CREATED), mapping: { a: 1 } }),
  ),
  failure("put-properties-array", "W4", "PUT with properties that are an array: 400", "write", 400, "invalid_properties", async (ctx) =>
    ctx.send("PUT", { user_group_id: await ctx.id(NOT_CREATED), properties: [] }),
  ),
  failure("put-body-empty", "W2", "PUT with an empty body: 400 invalid_body", "write", 400, "invalid_body", (ctx) => ctx.send("PUT", undefined, { raw: "" })),
  failure("delete-body-empty", "W2", "DELETE with an empty body: 400 invalid_body", "write", 400, "invalid_body", (ctx) => ctx.send("DELETE", undefined, { raw: "" })),
  failure("post-token-missing", "W4", "POST without current_token: 400", "write", 400, "invalid_current_token", (ctx) => ctx.send("POST", {})),
  failure("delete-unknown-token", "W8", "DELETE with a token nobody holds: 404", "write", 404, "user_group_not_found", (ctx) => ctx.send("DELETE", { current_token: "e".repeat(64) })),
  {
    id: "name-counts-characters",
    clause: "W4",
    title: `a name of ${MAX_NAME_CHARS} characters outside the BMP (${MAX_NAME_CHARS * 2} UTF-16 units) is accepted`,
    mode: "write",
    expected: () => ({ status: 200, code: "ok" }),
    run: async (ctx) => outcome(await ctx.send("GET", { name: "\u{1F600}".repeat(MAX_NAME_CHARS), user_group_id: await ctx.id("astral-name") })),
  },
  failure("put-id-missing", "W4", "PUT without user_group_id: 400", "write", 400, "invalid_user_group_id", (ctx) => ctx.send("PUT", { name: "N" })),
  failure("post-token-number", "W4", "POST with a current_token that is a number: 400", "write", 400, "invalid_current_token", (ctx) => ctx.send("POST", { current_token: 5 })),
  failure("delete-token-missing", "W4", "DELETE without current_token: 400", "write", 400, "invalid_current_token", (ctx) => ctx.send("DELETE", {})),
  // ---- read-only keys (W1) ----
  failure("ro-get-new", "W1", "a read-only key's GET of a new id: 403", "read-only", 403, "forbidden", async (ctx) => ctx.send("GET", { name: "N", user_group_id: await ctx.id("ro-new") })),
  failure("ro-put", "W1", "a read-only key's PUT: 403", "read-only", 403, "forbidden", async (ctx) => ctx.send("PUT", { user_group_id: await ctx.id(NOT_CREATED), name: "N" })),
  failure("ro-post", "W1", "a read-only key's POST: 403", "read-only", 403, "forbidden", (ctx) => ctx.send("POST", { current_token: "0".repeat(64) })),
  failure("ro-delete", "W1", "a read-only key's DELETE: 403", "read-only", 403, "forbidden", (ctx) => ctx.send("DELETE", { current_token: "0".repeat(64) })),
  // ---- W5 get-or-create ----
  {
    id: "get-creates",
    clause: "W5",
    title: "GET of a new id creates it: the answer's fields, a 64-hex token, a positive team_id, the echoes",
    mode: "write",
    expected: () => ({ status: 200, success: 1, new_user_group: true, "answer fields": ["success", "new_user_group", "user_group"].sort(), "group fields": ["name", "properties", "provided_id", "team_id", "token"], "token is 64 lowercase hex": true, "team_id positive integer": true, "provided_id echoes the id": true, "name echoes the name": true, properties: "null" }),
    run: async (ctx) => {
      const { id, answer } = await create(ctx, "creates");
      const g = group(answer);
      return {
        status: answer.status,
        success: (obj(answer.json)["success"] as FactValue) ?? null,
        new_user_group: (obj(answer.json)["new_user_group"] as FactValue) ?? null,
        "answer fields": fields(answer.json),
        "group fields": fields(g),
        "token is 64 lowercase hex": TOKEN.test(tokenOf(answer)),
        "team_id positive integer": Number.isInteger(g["team_id"]) && (g["team_id"] as number) > 0,
        "provided_id echoes the id": g["provided_id"] === id,
        "name echoes the name": g["name"] === "Conformance creates",
        properties: g["properties"] === undefined ? "(absent)" : JSON.stringify(g["properties"]),
      };
    },
  },
  {
    id: "get-existing-takes-no-action",
    clause: "W5",
    title: "GET of an existing id changes nothing and says new_user_group false",
    mode: "write",
    expected: () => ({ new_user_group: false, "same token": true, "same team_id": true, "stored name kept": true }),
    run: async (ctx) => {
      const first = await create(ctx, "existing");
      const again = await ctx.send("GET", { name: "Another name", user_group_id: first.id, properties: { changed: true } });
      return {
        new_user_group: (obj(again.json)["new_user_group"] as FactValue) ?? null,
        "same token": tokenOf(again) === tokenOf(first.answer) && tokenOf(again) !== "",
        "same team_id": group(again)["team_id"] === group(first.answer)["team_id"],
        "stored name kept": group(again)["name"] === "Conformance existing",
      };
    },
  },
  {
    id: "get-properties-echo",
    clause: "W5",
    title: "properties given are returned",
    mode: "write",
    expected: () => ({ status: 200, properties: JSON.stringify({ tier: "gold", seats: 3 }) }),
    run: async (ctx) => {
      const { answer } = await create(ctx, "properties", { properties: { tier: "gold", seats: 3 }, mapping: { sales: "db1" } });
      return { status: answer.status, properties: JSON.stringify(group(answer)["properties"] ?? null) };
    },
  },
  {
    id: "get-name-at-limit",
    clause: "W4",
    title: `a name of exactly ${MAX_NAME_CHARS} characters is accepted`,
    mode: "write",
    expected: () => ({ status: 200, code: "ok" }),
    run: async (ctx) => outcome(await ctx.send("GET", { name: "n".repeat(MAX_NAME_CHARS), user_group_id: await ctx.id("name-limit") })),
  },
  {
    id: "get-mapping-at-limit",
    clause: "W4",
    title: `a mapping of exactly ${MAX_MAPPING_KEYS} keys is accepted`,
    mode: "write",
    expected: () => ({ status: 200, code: "ok" }),
    run: async (ctx) =>
      outcome(
        await ctx.send("GET", {
          name: "N",
          user_group_id: await ctx.id("mapping-limit"),
          mapping: Object.fromEntries(Array.from({ length: MAX_MAPPING_KEYS }, (_, i) => [`k${i}`, "v"])),
        }),
      ),
  },
  {
    id: "get-concurrent-creates-one",
    clause: "W5",
    title: "four concurrent GETs of one new id create exactly one group",
    mode: "write",
    expected: () => ({ "created by one": 1, "one token": 1 }),
    run: async (ctx) => {
      const id = await ctx.id("concurrent");
      const answers = await Promise.all([0, 1, 2, 3].map(() => ctx.send("GET", { name: "N", user_group_id: id })));
      return {
        "created by one": answers.filter((a) => obj(a.json)["new_user_group"] === true).length,
        "one token": new Set(answers.map(tokenOf)).size,
      };
    },
  },
  {
    id: "unique-tokens-and-team-ids",
    clause: "W10",
    title: "two groups get different tokens and team ids",
    mode: "write",
    expected: () => ({ "tokens differ": true, "team ids differ": true }),
    run: async (ctx) => {
      const a = await create(ctx, "unique-a");
      const b = await create(ctx, "unique-b");
      return { "tokens differ": tokenOf(a.answer) !== tokenOf(b.answer), "team ids differ": group(a.answer)["team_id"] !== group(b.answer)["team_id"] };
    },
  },
  {
    id: "ids-case-sensitive",
    clause: "W4",
    title: "user_group_id is case-sensitive",
    mode: "write",
    expected: () => ({ "other case is new": true }),
    run: async (ctx) => {
      const { id } = await create(ctx, "case");
      const upper = id.toUpperCase();
      const answer = await ctx.send("GET", { name: "N", user_group_id: upper });
      // The upper-case id is this run's too: remember it for the clean-up.
      await ctx.id(upper);
      return { "other case is new": obj(answer.json)["new_user_group"] === true };
    },
  },
  // ---- W6 update ----
  {
    id: "put-updates",
    clause: "W6",
    title: "PUT replaces the fields given, keeps the token and team id, answers with api_environment_tag and no new_user_group",
    mode: "write",
    expected: (ctx) => ({ status: 200, "group fields": ["api_environment_tag", "name", "properties", "provided_id", "team_id", "token"], "answer fields": ["success", "user_group"], "name replaced": true, "token kept": true, "team_id kept": true, ...(ctx.environment === undefined ? {} : { api_environment_tag: ctx.environment }) }),
    run: async (ctx) => {
      const first = await create(ctx, "update");
      const answer = await ctx.send("PUT", { user_group_id: first.id, name: "Renamed", unknown_field: "ignored" });
      return {
        status: answer.status,
        "group fields": fields(group(answer)),
        "answer fields": fields(answer.json),
        "name replaced": group(answer)["name"] === "Renamed",
        "token kept": tokenOf(answer) === tokenOf(first.answer),
        "team_id kept": group(answer)["team_id"] === group(first.answer)["team_id"],
        ...(ctx.environment === undefined ? {} : { api_environment_tag: String(group(answer)["api_environment_tag"]) }),
      };
    },
  },
  {
    id: "put-properties-null-clears",
    clause: "W6",
    title: "PUT with properties null clears them",
    mode: "write",
    expected: () => ({ status: 200, properties: "null" }),
    run: async (ctx) => {
      const first = await create(ctx, "clear", { properties: { a: 1 } });
      const answer = await ctx.send("PUT", { user_group_id: first.id, properties: null });
      return { status: answer.status, properties: JSON.stringify(group(answer)["properties"] ?? null) };
    },
  },
  failure("put-unknown", "W6", "PUT of an unknown id: 404", "write", 404, "user_group_not_found", async (ctx) => ctx.send("PUT", { user_group_id: await ctx.id("never-made"), name: "N" })),
  // ---- W7 rotate ----
  {
    id: "post-rotates",
    clause: "W7",
    title: "POST issues a new token (the old one stops at once), keeps the team id, answers with api_environment_tag",
    mode: "write",
    expected: () => ({ status: 200, "group fields": ["api_environment_tag", "name", "provided_id", "team_id", "token"], "new token": true, "new token is 64 lowercase hex": true, "team_id kept": true, "old token refused": 404, "new token works": 200 }),
    run: async (ctx) => {
      const first = await create(ctx, "rotate");
      const answer = await ctx.send("POST", { current_token: tokenOf(first.answer) });
      const old = await ctx.send("POST", { current_token: tokenOf(first.answer) });
      const renewed = await ctx.send("POST", { current_token: tokenOf(answer) });
      return {
        status: answer.status,
        "group fields": fields(group(answer)),
        "new token": tokenOf(answer) !== tokenOf(first.answer),
        "new token is 64 lowercase hex": TOKEN.test(tokenOf(answer)),
        "team_id kept": group(answer)["team_id"] === group(first.answer)["team_id"],
        "old token refused": old.status,
        "new token works": renewed.status,
      };
    },
  },
  failure("post-unknown-token", "W7", "POST with a token nobody holds: 404", "write", 404, "user_group_not_found", (ctx) => ctx.send("POST", { current_token: "f".repeat(64) })),
  // ---- W8 delete ----
  {
    id: "delete-id-mismatch",
    clause: "W8",
    title: "DELETE with another user_group_id or data_source_provided_id: 409, nothing deleted",
    mode: "write",
    expected: () => ({ "user_group_id mismatch": 409, "user_group_id mismatch code": "id_mismatch", "data_source_provided_id mismatch": 409, "still there": true }),
    run: async (ctx) => {
      const first = await create(ctx, "mismatch");
      const a = await ctx.send("DELETE", { current_token: tokenOf(first.answer), user_group_id: `${first.id}-other` });
      const b = await ctx.send("DELETE", { current_token: tokenOf(first.answer), data_source_provided_id: `${first.id}-other` });
      const after = await ctx.send("PUT", { user_group_id: first.id });
      return {
        "user_group_id mismatch": a.status,
        "user_group_id mismatch code": outcome(a)["code"] as string,
        "data_source_provided_id mismatch": b.status,
        "still there": after.status === 200,
      };
    },
  },
  {
    id: "delete-deletes",
    clause: "W8",
    title: "DELETE answers exactly {success: 1}; the token then is unknown and the id free",
    mode: "write",
    expected: () => ({ status: 200, "answer fields": ["success"], success: 1, "token then unknown": 404, "id then free": true }),
    run: async (ctx) => {
      const first = await create(ctx, "delete");
      const answer = await ctx.send("DELETE", { current_token: tokenOf(first.answer), user_group_id: first.id, data_source_provided_id: first.id });
      const again = await ctx.send("DELETE", { current_token: tokenOf(first.answer) });
      const after = await ctx.send("PUT", { user_group_id: first.id });
      return {
        status: answer.status,
        "answer fields": fields(answer.json),
        success: (obj(answer.json)["success"] as FactValue) ?? null,
        "token then unknown": again.status,
        "id then free": after.status === 404,
      };
    },
  },
  ...WIRE_TEST_CHECKS,
];
