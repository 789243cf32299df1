// Verification (testing/requests.ts): journal queries by method, path, group id,
// status and trace id, and assertions whose failure shows expected against sent,
// never a token or a key.
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeServer, type FakeServer, type FakeServerNamespace } from "../../fake-server/index.js";
import { expectRequests, findRequests, RequestsNotAsExpectedError } from "../../testing/index.js";

let server: FakeServer;
let ns: FakeServerNamespace;
let token = "";
const TRACE = "0af7651916cd43dd8448eb211c80319c";

async function send(method: string, body: unknown, traceparent?: string): Promise<{ status: number; json: { user_group?: { token: string } } }> {
  const res = await request(`${server.url}/api/user`, {
    method: method as "GET",
    headers: { authorization: `Token ${ns.key}`, "content-type": "application/json", ...(traceparent === undefined ? {} : { traceparent }) },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: (await res.body.json()) as { user_group?: { token: string } } };
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: "verification-key-0001", environment: "Customer" }] });
  ns = server.namespace();
  token = (await send("GET", { name: "Acme", user_group_id: "acme", mapping: { sales: "db1" } }, `00-${TRACE}-b7ad6b7169203331-01`)).json.user_group!.token;
  await send("PUT", { user_group_id: "acme", name: "ACME Corp" });
  await send("PUT", { user_group_id: "missing", name: "x" });
  await send("POST", { current_token: token });
});
afterAll(async () => {
  await server.close();
});

describe("findRequests", () => {
  it("queries by method, path, group id, status, code, trace id and body fields", () => {
    const journal = ns.journal();
    expect(findRequests(journal, { method: "put" })).toHaveLength(2);
    expect(findRequests(journal, { path: "/api/user" })).toHaveLength(4);
    expect(findRequests(journal, { userGroupId: "acme" }).map((e) => e.method)).toEqual(["GET", "PUT", "POST"]);
    expect(findRequests(journal, { status: 404 }).map((e) => e.userGroupId)).toEqual(["missing"]);
    expect(findRequests(journal, { code: "user_group_not_found" })).toHaveLength(1);
    expect(findRequests(journal, { traceId: TRACE }).map((e) => e.method)).toEqual(["GET"]);
    expect(findRequests(journal, { body: { mapping: { sales: "db1" } } })).toHaveLength(1);
    expect(findRequests(journal, { method: "DELETE" })).toEqual([]);
  });
});

describe("expectRequests", () => {
  it("passes and returns the matches when the count holds", () => {
    expect(expectRequests(ns.journal(), { method: "PUT", userGroupId: "acme" }, { times: 1 })).toHaveLength(1);
    expect(expectRequests(ns.journal(), { method: "GET" })).toHaveLength(1);
  });

  it("fails with every request sent, the closest marked, and a field-by-field difference", () => {
    let error: unknown;
    try {
      expectRequests(ns.journal(), { method: "PUT", userGroupId: "acme", body: { name: "Acme Corp" } }, { times: 1 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RequestsNotAsExpectedError);
    const message = (error as Error).message;
    expect(message).toBe(
      [
        'expected exactly 1 request(s) matching {"method":"PUT","userGroupId":"acme","body":{"name":"Acme Corp"}}, found 0.',
        "Sent (4):",
        `  1. GET /api/user -> 200 [acme] {"name":"Acme","user_group_id":"acme","mapping":{"sales":"db1"}}`,
        '  2. PUT /api/user -> 200 [acme] {"user_group_id":"acme","name":"ACME Corp"}  (closest)',
        '  3. PUT /api/user -> 404 user_group_not_found [missing] {"user_group_id":"missing","name":"x"}',
        '  4. POST /api/user -> 200 [acme] {"current_token":"[REDACTED]"}',
        "Closest, request 2 (- expected, + sent):",
        "  body.name:",
        '    - "Acme Corp"',
        '    + "ACME Corp"',
      ].join("\n"),
    );
    expect((error as RequestsNotAsExpectedError).code).toBe("requests_not_as_expected");
  });

  it("never shows a token or a key, even one written into the expectation", () => {
    let message = "";
    try {
      expectRequests(ns.journal(), { method: "POST", body: { current_token: token, note: ns.key } }, { times: 1 }, [ns.key]);
    } catch (caught) {
      message = (caught as Error).message;
    }
    expect(message).toContain("body.current_token:");
    expect(message).not.toContain(token);
    expect(message).not.toContain(ns.key);
    expect(message).toContain("[REDACTED]");
  });

  it("says so when nothing was sent", () => {
    expect(() => expectRequests([], { method: "GET" })).toThrow(/expected at least 1 request\(s\) matching \{"method":"GET"\}, found 0\.\nNo request was sent\./);
  });
});
