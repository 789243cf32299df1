// Checks added from the emulator's own wire tests (test/fake-server/requests.unit.test.ts,
// operations.unit.test.ts, hardening.unit.test.ts): every one of those a remote target can
// answer is a check here or in checks.ts (docs/testing.md, "Which contract tests the kit holds").
import { API_PATH, MAX_ID_CHARS } from "../wire/schemas";
import { type Check, create, failure, type FactValue, field400, group, type Json, nested, noName, obj, outcome, padded, tokenOf, valid, variants } from "./check-kit";

/** The added checks (CHECKS holds them after the first ones). */
export const WIRE_TEST_CHECKS: readonly Check[] = [
  variants("auth-scheme-and-key-case", "W1", "the scheme word is case-insensitive, the key is not", "any", [
    ["`token <key>`", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx), { scheme: "token" })],
    ["`TOKEN <key>`", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx), { scheme: "TOKEN" })],
    ["`Token <KEY, case swapped>`", "401 unauthorized", async (ctx) => ctx.send("GET", await noName(ctx), { swapKeyCase: true })],
  ]),
  variants("auth-each-request", "W1", "on one keep-alive connection each request is judged by its own key", "any", [
    ["the key", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx))],
    ["an unknown key", "401 unauthorized", async (ctx) => ctx.send("GET", await noName(ctx), { authorization: "Token conformance-unknown-key-0000" })],
    ["the key again", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx))],
    ["no key", "401 unauthorized", async (ctx) => ctx.send("GET", await noName(ctx), { authorization: null })],
    ["the key once more", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx))],
  ]),
  variants("media-variants", "W2", "other media types: 415; application/json with a charset, in any case: accepted", "any", [
    ["application/x-www-form-urlencoded", "415 unsupported_media_type", async (ctx) => ctx.send("GET", await valid(ctx), { contentType: "application/x-www-form-urlencoded" })],
    ["application/jsonx", "415 unsupported_media_type", async (ctx) => ctx.send("GET", await valid(ctx), { contentType: "application/jsonx" })],
    ["application/json; charset=latin1", "415 unsupported_media_type", async (ctx) => ctx.send("GET", await valid(ctx), { contentType: "application/json; charset=latin1" })],
    ["Application/JSON;charset=UTF-8", "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx), { contentType: "Application/JSON;charset=UTF-8" })],
    ['application/json; charset="utf-8"', "400 invalid_name", async (ctx) => ctx.send("GET", await noName(ctx), { contentType: 'application/json; charset="utf-8"' })],
  ]),
  variants("body-variants", "W2", "a body that is not one JSON object: 400", "any", [
    ["null", "400 invalid_body", (ctx) => ctx.send("GET", undefined, { raw: "null" })],
    ["a number", "400 invalid_body", (ctx) => ctx.send("GET", undefined, { raw: "42" })],
    ["whitespace", "400 invalid_body", (ctx) => ctx.send("GET", undefined, { raw: "  \n " })],
    ["two objects", "400 invalid_json", (ctx) => ctx.send("GET", undefined, { raw: "{}{}" })],
    ["invalid UTF-8", "400 invalid_json", (ctx) => ctx.send("GET", undefined, { raw: Buffer.from([0x7b, 0xff, 0x7d]) })],
  ]),
  failure("post-body-empty", "W2", "POST with an empty body: 400 invalid_body", "write", 400, "invalid_body", (ctx) => ctx.send("POST", undefined, { raw: "" })),
  failure("path-query-string", "W2", "a query string is ignored: `/api/user?x=1` is the same path", "any", 400, "invalid_name", async (ctx) => ctx.send("GET", await noName(ctx), { path: `${API_PATH}?x=1` })),
  variants("path-variants", "W2", "other paths: 404 not_found", "any", [
    ["/", "404 not_found", async (ctx) => ctx.send("GET", await valid(ctx), { path: "/" })],
    ["/api", "404 not_found", async (ctx) => ctx.send("GET", await valid(ctx), { path: "/api" })],
    ["/api/user/<id>", "404 not_found", async (ctx) => ctx.send("GET", await valid(ctx), { path: `${API_PATH}/conformance` })],
    ["/API/USER", "404 not_found", async (ctx) => ctx.send("GET", await valid(ctx), { path: API_PATH.toUpperCase() })],
  ]),
  {
    id: "method-variants",
    clause: "W2",
    title: "OPTIONS and HEAD: 405 with Allow",
    mode: "any",
    expected: () => ({ OPTIONS: 405, "OPTIONS code": "method_not_allowed", HEAD: 405, "HEAD Allow": ["DELETE", "GET", "POST", "PUT"] }),
    run: async (ctx) => {
      const options = await ctx.send("OPTIONS", await valid(ctx));
      const head = await ctx.send("HEAD", undefined);
      return {
        OPTIONS: options.status,
        "OPTIONS code": outcome(options)["code"] as string,
        HEAD: head.status,
        "HEAD Allow": String(head.headers["allow"] ?? "").split(/\s*,\s*/).filter(Boolean).sort(),
      };
    },
  },
  failure("body-at-limit", "W2", "a body of exactly 1 MiB is read (and answered on its merits)", "any", 400, "invalid_name", async (ctx) =>
    ctx.send("GET", undefined, { raw: padded(await noName(ctx), 1024 * 1024) }),
  ),
  field400("properties-proto-key", "a __proto__ key in properties: 400 (W4, the emulator's own limit)", "invalid_properties", (id) => JSON.parse(`{"name":"N","user_group_id":${JSON.stringify(id)},"properties":{"__proto__":{"a":1}}}`) as Json),
  {
    id: "properties-at-depth-limit",
    clause: "W4*",
    title: "properties nested 64 deep are accepted (the emulator's own limit is 64)",
    mode: "write",
    expected: () => ({ status: 200, code: "ok" }),
    run: async (ctx) => outcome(await ctx.send("GET", undefined, { raw: `{"name":"N","user_group_id":${JSON.stringify(await ctx.id("depth-64"))},"properties":${nested(64)}}` })),
  },
  {
    id: "id-counts-characters",
    clause: "W4",
    title: `a user_group_id of ${MAX_ID_CHARS} characters outside the BMP is accepted and echoed`,
    mode: "write",
    expected: () => ({ status: 200, code: "ok", "provided_id echoes the id": true }),
    run: async (ctx) => {
      // The prefix and run id count: the rest is filled with one emoji per character.
      const start = await ctx.id("astral-id");
      const id = `${start}${"\u{1F600}".repeat(MAX_ID_CHARS - [...start].length)}`;
      await ctx.id(id);
      const answer = await ctx.send("GET", { name: "N", user_group_id: id });
      return { ...outcome(answer), "provided_id echoes the id": group(answer)["provided_id"] === id };
    },
  },
  {
    id: "put-bad-field-changes-nothing",
    clause: "W6",
    title: "a PUT with one bad field changes nothing, even the fields that are fine",
    mode: "write",
    expected: () => ({ status: 400, code: "invalid_mapping", "name kept": true }),
    run: async (ctx) => {
      const first = await create(ctx, "bad-put");
      const answer = await ctx.send("PUT", { user_group_id: first.id, name: "Changed", mapping: { a: 1 } });
      const after = await ctx.send("PUT", { user_group_id: first.id });
      return { ...outcome(answer), "name kept": group(after)["name"] === "Conformance bad-put" };
    },
  },
  {
    id: "get-after-rotate",
    clause: "W7",
    title: "after a rotation, GET of the id returns the new token",
    mode: "write",
    expected: () => ({ "GET returns the new token": true }),
    run: async (ctx) => {
      const first = await create(ctx, "rotate-get");
      const rotated = await ctx.send("POST", { current_token: tokenOf(first.answer) });
      const again = await ctx.send("GET", { name: "N", user_group_id: first.id });
      return { "GET returns the new token": tokenOf(again) === tokenOf(rotated) && tokenOf(rotated) !== tokenOf(first.answer) };
    },
  },
  {
    id: "delete-unknown-token-known-id",
    clause: "W8",
    title: "DELETE with an unknown token is 404 even when the id exists; nothing deleted",
    mode: "write",
    expected: () => ({ status: 404, code: "user_group_not_found", "still there": true }),
    run: async (ctx) => {
      const first = await create(ctx, "wrong-token");
      const answer = await ctx.send("DELETE", { current_token: "d".repeat(64), user_group_id: first.id });
      const after = await ctx.send("PUT", { user_group_id: first.id });
      return { ...outcome(answer), "still there": after.status === 200 };
    },
  },
  {
    id: "delete-then-recreate",
    clause: "W8",
    title: "a deleted id can be created again, with a new token and team id",
    mode: "write",
    expected: () => ({ new_user_group: true, "new token": true, "new team_id": true }),
    run: async (ctx) => {
      const first = await create(ctx, "recreate");
      await ctx.send("DELETE", { current_token: tokenOf(first.answer) });
      const again = await ctx.send("GET", { name: "N", user_group_id: first.id });
      return {
        new_user_group: (obj(again.json)["new_user_group"] as FactValue) ?? null,
        "new token": tokenOf(again) !== tokenOf(first.answer) && tokenOf(again) !== "",
        "new team_id": group(again)["team_id"] !== group(first.answer)["team_id"],
      };
    },
  },
];

