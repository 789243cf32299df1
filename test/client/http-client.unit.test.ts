// The HTTP client against the real fake server over HTTP: retries, Retry-After,
// lost answers, typed errors that say what failed and never hold a secret.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupApiError } from "../../provider/client/errors";
import { UserGroupsClient } from "../../provider/client/http-client";
import { clockWith } from "../../provider/clock";
import { RunFencedError } from "../../provider/backends";

const KEY = "client-test-key-customer-0001";
const RO_KEY = "client-test-key-readonly-0002";
let server: FakeServer;
const clients: UserGroupsClient[] = [];

function client(options: Partial<ConstructorParameters<typeof UserGroupsClient>[0]> = {}) {
  const sleeps: number[] = [];
  const c = new UserGroupsClient({
    baseUrl: server.url,
    apiKey: KEY,
    clock: clockWith({
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
    }),
    ...options,
  });
  clients.push(c);
  return { client: c, sleeps };
}

async function failureOf(promise: Promise<unknown>): Promise<UserGroupApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UserGroupApiError);
  return error as UserGroupApiError;
}

beforeAll(async () => {
  server = await startFakeServer({
    apiKeys: [
      { key: KEY, environment: "Customer" },
      { key: RO_KEY, environment: "Customer", readOnly: true },
    ],
  });
});
afterEach(async () => {
  await server.reset();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.close();
});

describe("UserGroupsClient", () => {
  it("creates, reads back, updates, rotates and deletes a group", async () => {
    const { client: c } = client();
    const created = await c.getOrCreate({ name: "Acme", user_group_id: "acme", mapping: { s: "eu" }, properties: { seats: 3 } });
    expect(created.response.new_user_group).toBe(true);
    expect(created.response.user_group).toMatchObject({ name: "Acme", provided_id: "acme", properties: { seats: 3 } });
    const again = await c.getOrCreate({ name: "Other", user_group_id: "acme" });
    expect(again.response).toMatchObject({ new_user_group: false, user_group: { name: "Acme", token: created.response.user_group.token } });

    const updated = await c.update({ user_group_id: "acme", name: "Acme Corp" });
    expect(updated.user_group).toMatchObject({ name: "Acme Corp", api_environment_tag: "Customer" });
    expect(c.environment).toBe("Customer");

    const rotated = await c.rotateToken(created.response.user_group.token, "acme");
    expect(rotated.user_group.token).not.toBe(created.response.user_group.token);
    expect(server.groups()[0]?.token).toBe(rotated.user_group.token);

    await c.delete({ current_token: rotated.user_group.token, user_group_id: "acme" });
    expect(server.groups()).toEqual([]);
  });

  it("sends the API key, JSON and its User-Agent on every request, a body on GET included", async () => {
    const seen: Array<{ method?: string; headers: Record<string, unknown>; body: string }> = [];
    const bare: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        seen.push({ method: req.method, headers: req.headers, body });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ success: 1, new_user_group: true, user_group: { team_id: 1, token: "a".repeat(64), name: "n", provided_id: "i", properties: null } }));
      });
    });
    await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
    const { client: c } = client({ baseUrl: `http://127.0.0.1:${(bare.address() as AddressInfo).port}` });
    await c.getOrCreate({ name: "n", user_group_id: "i" });
    await new Promise<void>((resolve) => bare.close(() => resolve()));
    expect(seen[0]?.method).toBe("GET");
    expect(seen[0]?.headers).toMatchObject({ authorization: `Token ${KEY}`, "content-type": "application/json" });
    expect(String(seen[0]?.headers["user-agent"])).toMatch(/^pulumi-user-groups\/\d+\.\d+\.\d+/);
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({ name: "n", user_group_id: "i" });
  });

  it("retries 5xx answers with backoff and succeeds", async () => {
    server.setFaults([{ method: "GET", action: "status", status: 503, times: 2 }]);
    const { client: c, sleeps } = client();
    const result = await c.getOrCreate({ name: "A", user_group_id: "a" });
    expect(result.response.new_user_group).toBe(true);
    expect(sleeps).toEqual([125, 250]); // full jitter at random()=0.5: half of 250, then of 500
    expect(server.groups()).toHaveLength(1);
  });

  it("asks the run's fence before every attempt, retries included; a fenced run sends nothing (run_fenced)", async () => {
    server.setFaults([{ method: "GET", action: "status", status: 503, times: 1 }]);
    let checks = 0;
    let fenced = false;
    const runFence = {
      check: async () => {
        checks += 1;
        if (fenced) throw new RunFencedError("the run's lease (epoch 1) is no longer current");
      },
    };
    const { client: c } = client({ runFence });
    await c.getOrCreate({ name: "A", user_group_id: "a" });
    expect(checks).toBe(2);
    const before = server.journal().length;
    fenced = true;
    const error = await c.getOrCreate({ name: "B", user_group_id: "b" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunFencedError);
    expect(error).toMatchObject({ code: "run_fenced" });
    expect(server.journal()).toHaveLength(before);
    expect(server.groups().map((g) => g.user_group_id)).toEqual(["a"]);
  });

  it("waits as long as Retry-After asks on 429", async () => {
    server.setFaults([{ method: "PUT", action: "status", status: 429, retryAfter: 3, times: 1 }]);
    await client().client.getOrCreate({ name: "A", user_group_id: "a" });
    const { client: c, sleeps } = client();
    await c.update({ user_group_id: "a", name: "B" });
    expect(sleeps).toEqual([3000]);
  });

  it("retries a reset connection", async () => {
    server.setFaults([{ method: "GET", action: "reset", times: 1 }]);
    const { client: c, sleeps } = client();
    expect((await c.getOrCreate({ name: "A", user_group_id: "a" })).response.new_user_group).toBe(true);
    expect(sleeps).toHaveLength(1);
  });

  it("notes when an earlier attempt may have created the group (lost answer)", async () => {
    server.setFaults([{ method: "GET", action: "drop-after-apply", times: 1 }]);
    const { client: c } = client();
    const result = await c.getOrCreate({ name: "A", user_group_id: "a" });
    expect(result).toMatchObject({ earlierAttemptMayHaveApplied: true, response: { new_user_group: false } });
    expect(server.groups()).toHaveLength(1);
  });

  it("never repeats a rotation whose answer was lost", async () => {
    const { client: c } = client();
    const token = (await c.getOrCreate({ name: "A", user_group_id: "a" })).response.user_group.token;
    server.setFaults([{ method: "POST", action: "drop-after-apply", times: 1 }]);
    const error = await failureOf(c.rotateToken(token, "a"));
    expect(error).toMatchObject({ kind: "network", ambiguous: true, attempts: 1, method: "POST" });
    expect(server.journal().filter((entry) => entry.method === "POST")).toHaveLength(1);
    expect(server.groups()[0]?.token).not.toBe(token); // it did happen on the server
  });

  it("gives up after its attempts with an error that says what failed", async () => {
    server.setFaults([{ method: "PUT", action: "status", status: 500 }]);
    const { client: c } = client({ retry: { maxAttempts: 3 } });
    const token = (await c.getOrCreate({ name: "A", user_group_id: "a" })).response.user_group.token;
    const error = await failureOf(c.update({ user_group_id: "a", name: "B" }));
    expect(error).toMatchObject({ kind: "http", status: 500, code: "injected_fault", attempts: 3, userGroupId: "a" });
    expect(error.message).toMatch(new RegExp(`Update User \\(PUT ${server.url}/api/user\\) for user_group_id "a".* failed after 3 attempts: HTTP 500 injected_fault`));
    // (That no secret is in such a message, even when the service quotes one, is
    // "redaction of what the service says back" below.)
  });

  it("does not retry a 4xx and explains 401 and 403", async () => {
    const { client: wrongKey, sleeps } = client({ apiKey: "not-a-known-key-123" });
    const unauthorized = await failureOf(wrongKey.getOrCreate({ name: "A", user_group_id: "a" }));
    expect(unauthorized).toMatchObject({ status: 401, code: "unauthorized", attempts: 1 });
    expect(unauthorized.message).toMatch(/check the API key/);
    expect(unauthorized.message).not.toContain("not-a-known-key-123");
    expect(sleeps).toEqual([]);

    const forbidden = await failureOf(client({ apiKey: RO_KEY }).client.getOrCreate({ name: "A", user_group_id: "new" }));
    expect(forbidden).toMatchObject({ status: 403, code: "forbidden" });
    expect(forbidden.message).toMatch(/read-only/);
  });

  it("reports unknown groups as not found", async () => {
    const error = await failureOf(client().client.update({ user_group_id: "missing", name: "x" }));
    expect(error.isNotFound).toBe(true);
    expect(error.message).toMatch(/HTTP 404 user_group_not_found/);
  });

  it("fails in bounded time against a dead address, naming it", async () => {
    const dead = new UserGroupsClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    clients.push(dead);
    const started = Date.now();
    const error = await failureOf(dead.getOrCreate({ name: "A", user_group_id: "a" }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({ kind: "network", code: "ECONNREFUSED", attempts: 3, ambiguous: false });
    expect(error.message).toContain("no answer from http://127.0.0.1:1");
  });

  it("times out a server that never answers", async () => {
    server.setFaults([{ method: "GET", action: "delay", delayMs: 1_500 }]);
    const { client: c } = client({ timeouts: { headersMs: 200 }, retry: { maxAttempts: 2 } });
    const error = await failureOf(c.getOrCreate({ name: "A", user_group_id: "slow" }));
    expect(error).toMatchObject({ kind: "network", code: "UND_ERR_HEADERS_TIMEOUT", attempts: 2 });
    server.clearFaults();
  });

  it("treats a body whose success is not 1 as a failure, whatever the status", async () => {
    const bare: Server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ success: 0 }));
    });
    await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
    const { client: c } = client({ baseUrl: `http://127.0.0.1:${(bare.address() as AddressInfo).port}` });
    const error = await failureOf(c.delete({ current_token: "x".repeat(64) }));
    await new Promise<void>((resolve) => bare.close(() => resolve()));
    expect(error).toMatchObject({ kind: "invalid_response", status: 200, attempts: 1 });
  });

  it("logs each attempt when asked: method, path, outcome, timing, never a body", async () => {
    const lines: string[] = [];
    server.setFaults([{ method: "POST", action: "status", status: 429, retryAfter: 1, times: 1 }]);
    const { client: c } = client({ log: (line) => lines.push(line) });
    const token = (await c.getOrCreate({ name: "A", user_group_id: "a" })).response.user_group.token;
    await c.rotateToken(token, "a");
    expect(lines[0]).toMatch(/^\[user-groups\] GET \/api\/user -> 200 \(\d+ ms, attempt 1\)$/);
    // Every line is one of the known shapes: none carries a body, a header or a server
    // message, so no secret can reach the log (redaction of the text that does carry
    // them is the next test).
    const shapes = [
      /^\[user-groups\] (GET|PUT|POST|DELETE) \/api\/user -> (\d{3}|[A-Z_a-z]+) \(\d+ ms, attempt \d+\)$/,
      /^\[user-groups\] rate limited; pacing requests \d+ ms apart$/,
      /^\[user-groups\] retrying (GET|PUT|POST|DELETE) in \d+ ms$/,
    ];
    for (const line of lines) expect(shapes.some((shape) => shape.test(line)), line).toBe(true);
    expect(lines.some((line) => line.includes("POST /api/user -> 429"))).toBe(true);
    expect(lines.some((line) => line.includes("retrying POST"))).toBe(true);
  });
});

describe("redaction of what the service says back", () => {
  // A service (or proxy) that quotes the request in its error: the Authorization
  // header and the current_token of the body, in a JSON error and in plain text.
  let quoting: Server;
  let url: string;
  beforeAll(async () => {
    quoting = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const quoted = `auth=${req.headers.authorization ?? ""} body=${body}`;
        if (req.method === "DELETE") {
          res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ success: 0, error: { code: "boom", message: quoted } }));
        } else {
          res.writeHead(502, { "content-type": "text/plain" }).end(quoted);
        }
      });
    });
    await new Promise<void>((resolve) => quoting.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(quoting.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => quoting.close(() => resolve())));

  const token = "c0ffee".padEnd(64, "7");
  // Not token-shaped: only the client's memory of what it sent can redact it.
  const oddToken = "odd-token-not-hex-0123";

  it.each([
    ["a JSON error message", "DELETE" as const, token],
    ["a plain-text error body", "POST" as const, token],
    ["a JSON error message quoting a token of no known shape", "DELETE" as const, oddToken],
  ])("an error quoting the key and the token in %s shows neither", async (_label, method, secret) => {
    const lines: string[] = [];
    const { client: c } = client({ baseUrl: url, retry: { maxAttempts: 2 }, log: (line) => lines.push(line) });
    const error = await failureOf(method === "DELETE" ? c.delete({ current_token: secret }) : c.rotateToken(secret, "a"));
    // The quote reached the message (so a broken redaction would show) ...
    expect(error.message).toContain("auth=Token [REDACTED]");
    expect(error.message).toMatch(/current_token.{0,4}\[REDACTED\]/);
    // ... without the secrets.
    for (const text of [error.message, JSON.stringify(error), lines.join("\n")]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(secret);
    }
  });
});
