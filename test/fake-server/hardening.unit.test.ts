// The fake server against hostile clients (issue #15, items 9-15): browser
// attacks on the admin API, memory per request, deep JSON, slow clients,
// `__proto__` keys, key material on the command line, the data file's temp file.
import { chmodSync, lstatSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCli } from "../../fake-server/cli-args.js";
import type { FakeServer } from "../../fake-server/index.js";
import { Journal, MAX_BODY_TEXT_CHARS, REDACTED, redactedJsonText } from "../../fake-server/journal.js";
import { parseApiKeyList, readApiKeysFile } from "../../fake-server/key-sources.js";
import { runCli } from "./cli-process.js";
import { KEYS, call, expectError, expectOk, start, useSharedServer } from "./helpers.js";

let server: FakeServer;
let dir: string;
useSharedServer((started) => (server = started));
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fake-server-hardening-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface RawReply {
  status: number;
  text: string;
}

/** node:http, so that Host, Origin and Content-Type are exactly what a browser or an attacker would send. */
function rawRequest(target: FakeServer, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawReply> {
  const url = new URL(target.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers, setHost: headers.Host === undefined }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function ownHost(target: FakeServer): string {
  return new URL(target.url).host;
}

describe("9. browser attacks on the admin API", () => {
  it("a foreign Host (DNS rebinding) gets 403 and no token", async () => {
    const token = expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET").user_group.token;
    const reply = await rawRequest(server, "GET", "/__admin/groups", { Host: `attacker.example:${server.port}` });
    expect(reply.status).toBe(403);
    expect(reply.text).not.toContain(token);
    expect(reply.text).toMatch(/"code":"forbidden"/);
  });

  it("a form POST (text/plain, CSRF) installs no fault rule", async () => {
    const body = JSON.stringify({ rules: [{ method: "GET", action: "status", status: 500 }] });
    const reply = await rawRequest(server, "POST", "/__admin/faults", { Host: ownHost(server), "Content-Type": "text/plain" }, body);
    expect(reply.status).toBe(415);
    expect(server.faults()).toEqual([]);
    const reset = await rawRequest(server, "POST", "/__admin/reset", { Host: ownHost(server), "Content-Type": "application/x-www-form-urlencoded" }, "a=b");
    expect(reset.status).toBe(415);
  });

  it("a page of another origin is refused, whatever the method; the server's own origin passes", async () => {
    const foreign = { Host: ownHost(server), Origin: "http://attacker.example" };
    expect((await rawRequest(server, "GET", "/__admin/groups", foreign)).status).toBe(403);
    const post = await rawRequest(server, "POST", "/__admin/faults", { ...foreign, "Content-Type": "application/json" }, JSON.stringify({ rules: [] }));
    expect(post.status).toBe(403);
    expect((await rawRequest(server, "GET", "/__admin/groups", { Host: ownHost(server), "Sec-Fetch-Site": "cross-site" })).status).toBe(403);
    // Another port on the same host is another origin.
    expect((await rawRequest(server, "GET", "/__admin/groups", { Host: ownHost(server), Origin: "http://127.0.0.1:1" })).status).toBe(403);

    const same = { Host: ownHost(server), Origin: server.url, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json" };
    const rule = JSON.stringify({ rules: [{ method: "PUT", action: "status", status: 503, times: 1 }] });
    expect((await rawRequest(server, "POST", "/__admin/faults", same, rule)).status).toBe(200);
    expect(server.faults()).toHaveLength(1);
    expect((await rawRequest(server, "GET", "/__admin/groups", { Host: `localhost:${server.port}` })).status).toBe(200);
  });
});

describe("10. memory per request", () => {
  it("keeps a capped, redacted text of each body: 20 requests of 1 MiB do not make a 20 MiB journal", async () => {
    const big = "x".repeat(1024 * 1024 - 200);
    for (let i = 0; i < 20; i++) {
      expectError(await call(server, "PUT", { user_group_id: `g${i}`, name: big, current_token: KEYS.customer }), 400, "invalid_name");
    }
    const reply = await request(`${server.url}/__admin/requests`);
    const text = await reply.body.text();
    expect(text.length).toBeLessThan(20 * (MAX_BODY_TEXT_CHARS + 1024));
    const journal = server.journal();
    expect(journal).toHaveLength(20);
    for (const entry of journal) {
      expect(entry.body).toBeNull();
      expect(entry.bodyPreview?.length).toBe(MAX_BODY_TEXT_CHARS);
      expect(entry.bodyPreview).toMatch(/^\{"user_group_id":"g\d+","name":"xxx/);
    }
    expect(text).not.toContain(KEYS.customer);
  });

  it("holds little memory for them: 40 requests of 1 MiB add well under 40 MiB of heap", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const heap = () => {
      gc();
      gc();
      const usage = process.memoryUsage();
      return usage.heapUsed + usage.arrayBuffers;
    };
    const big = "z".repeat(1024 * 1024 - 200);
    const before = heap();
    for (let i = 0; i < 40; i++) expectError(await call(server, "PUT", { user_group_id: `m${i}`, name: big }), 400, "invalid_name");
    const added = heap() - before;
    // Each entry keeps at most 16 KiB of text (the parsed body, or a slice pinning it, was 1 MiB each).
    expect(added).toBeLessThan(10 * 1024 * 1024);
    expect(server.journal()).toHaveLength(40);
  });

  it("is bounded by bytes: old entries go first once journalBytes is reached", async () => {
    const small = await start({ journalBytes: 3 * MAX_BODY_TEXT_CHARS });
    try {
      for (let i = 0; i < 10; i++) await call(small, "PUT", { user_group_id: `g${i}`, name: "y".repeat(100_000) });
      const ids = small.journal().map((e) => /"user_group_id":"(g\d+)"/.exec(e.bodyPreview ?? "")?.[1]);
      expect(ids.length).toBeLessThanOrEqual(3);
      expect(ids.at(-1)).toBe("g9");
    } finally {
      await small.close();
    }
  });

  it("redacts every configured key, however short", async () => {
    const shortKey = await start({ apiKeys: [{ key: "k7x", environment: "Customer" }] });
    try {
      await call(shortKey, "GET", { name: "named k7x", user_group_id: "k7x" }, { key: "k7x" });
      await call(shortKey, "GET", { name: "n", user_group_id: "x" }, { key: "q9" });
      const text = JSON.stringify(shortKey.journal());
      expect(text).not.toContain("k7x");
      expect(text).not.toContain("q9");
      expect(shortKey.journal()[0]?.body).toEqual({ name: `named ${REDACTED}`, user_group_id: REDACTED });
    } finally {
      await shortKey.close();
    }
  });

  it("redacts keys that JSON escapes (quotes, backslashes)", () => {
    const key = 'q"uo\\te';
    const journal = new Journal(10, 1_000_000, [key]);
    const entry = { startedAt: 0, method: "PUT", path: "/api/user", status: 200, durationMs: 1 };
    journal.add({ ...entry, body: { user_group_id: "a", name: `is ${key}` } });
    journal.add({ ...entry, body: { user_group_id: "b", name: "n" }, presentedKey: "pre\\sented" });
    journal.add({ ...entry, body: { user_group_id: "c", name: "has pre\\sented" }, presentedKey: "pre\\sented" });
    expect(journal.read().map((e) => e.body)).toEqual([
      { user_group_id: "a", name: `is ${REDACTED}` },
      { user_group_id: "b", name: "n" },
      { user_group_id: "c", name: `has ${REDACTED}` },
    ]);
  });
});

function nested(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
}

describe("11. deep JSON", () => {
  it("properties nested 64 deep is fine, 65 deep is 400 invalid_properties", async () => {
    expectOk(await call(server, "GET", undefined, { raw: `{"name":"A","user_group_id":"d64","properties":${nested(64)}}` }), "GET");
    expectError(await call(server, "GET", undefined, { raw: `{"name":"A","user_group_id":"d65","properties":${nested(65)}}` }), 400, "invalid_properties");
    expect(server.groups().map((g) => g.user_group_id)).toEqual(["d64"]);
  });

  it("200k levels: 400 (not a retried 500) in properties, ignored in an unknown field, and the journal still reads", async () => {
    const deep = 200_000;
    const arrays = `${"[".repeat(deep)}${"]".repeat(deep)}`;
    expectError(await call(server, "PUT", undefined, { raw: `{"user_group_id":"a","properties":{"p":${arrays}}}` }), 400, "invalid_properties");
    // An unknown field is ignored (W2): never walked, so its depth is no hazard.
    expectOk(await call(server, "GET", undefined, { raw: `{"name":"A","user_group_id":"a","unknown":${arrays}}` }), "GET");
    // Only fields of the operation count: POST has no `properties`.
    expectError(await call(server, "POST", undefined, { raw: `{"current_token":"t","properties":{"p":${arrays}}}` }), 404, "user_group_not_found");
    const reply = await request(`${server.url}/__admin/requests`);
    expect(reply.statusCode).toBe(200);
    expect(((await reply.body.json()) as { requests: unknown[] }).requests).toHaveLength(3);
  });

  it("redaction walks without recursion", () => {
    let value: unknown = { token: "secret-token-value" };
    for (let i = 0; i < 100_000; i++) value = [value];
    const { text, truncated } = redactedJsonText(value as never, ["secret-token-value"], 1_000_000);
    expect(truncated).toBe(false);
    expect(text.endsWith(`{"token":"${REDACTED}"}${"]".repeat(100_000)}`)).toBe(true);
  });
});

/** Resolves when the server closes the socket, with whatever it sent first. */
function closed(socket: Socket): Promise<string> {
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (text += chunk));
  return new Promise((resolve) => socket.on("close", () => resolve(text)));
}

function open(target: FakeServer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(target.port, target.host, () => resolve(socket));
    socket.on("error", reject);
  });
}

describe("12. slow clients", () => {
  it("cuts off a client that never finishes its headers, or its body, with a 408", async () => {
    const strict = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    try {
      const headers = await open(strict);
      const headersClosed = closed(headers);
      headers.write("PUT /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      expect(await headersClosed).toMatch(/^HTTP\/1\.1 408/);

      const body = await open(strict);
      const bodyClosed = closed(body);
      body.write(
        `PUT /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${KEYS.customer}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"user_group_id":`,
      );
      expect(await bodyClosed).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await strict.close();
    }
  });

  it("admin routes take small bodies only", async () => {
    const rules = Array.from({ length: 2000 }, () => ({ method: "GET", action: "status", status: 503, user_group_id: "x".repeat(40) }));
    const reply = await rawRequest(server, "POST", "/__admin/faults", { Host: ownHost(server), "Content-Type": "application/json" }, JSON.stringify({ rules }));
    expect(reply.status).toBe(413);
    expect(server.faults()).toEqual([]);
  });

  it("the command takes the limits as flags, with defaults", () => {
    const parsed = parseCli(["--headers-timeout", "5000", "--request-timeout", "20000", "--max-connections", "64"]);
    expect(parsed).toMatchObject({ kind: "run", config: { headersTimeoutMs: 5000, requestTimeoutMs: 20000, maxConnections: 64 } });
    expect(parseCli(["--max-connections", "0"])).toMatchObject({ kind: "error", message: /--max-connections must be a whole number/ });
  });
});

describe("13. __proto__ keys", () => {
  it("in mapping or properties: 400, not a silent drop", async () => {
    expectError(await call(server, "GET", undefined, { raw: '{"name":"A","user_group_id":"p","mapping":{"__proto__":"x"}}' }), 400, "invalid_mapping");
    expectError(
      await call(server, "GET", undefined, { raw: '{"name":"A","user_group_id":"p","properties":{"a":[{"__proto__":{"admin":true}}]}}' }),
      400,
      "invalid_properties",
    );
    expect(server.groups()).toEqual([]);
  });
});

describe("14. key material", () => {
  it("a bad --api-key never echoes any part of it", () => {
    for (const spec of ["sk=SECRET-VALUE", "SECRET-VALUE", "sk=SECRET-VALUE:ro", "a b=SECRET-VALUE"]) {
      const parsed = parseCli(["--api-key", spec]);
      expect(parsed.kind).toBe("error");
      expect(JSON.stringify(parsed)).not.toContain("SECRET");
    }
    const fromList = parseApiKeyList("good-key=Customer\nsk=SECRET-VALUE\n", "keys", false);
    expect(fromList).toMatch(/^keys line 2: /);
    expect(String(fromList)).not.toContain("SECRET");
  });

  it("--api-keys-file must be the owner's alone", () => {
    const file = join(dir, "keys-open");
    writeFileSync(file, "file-key-0001=Customer\n", { mode: 0o644 });
    chmodSync(file, 0o644);
    expect(() => readApiKeysFile(file, () => "")).toThrow(/group or others may access it \(mode 0644\); run chmod 600/);
    chmodSync(file, 0o600);
    expect(readApiKeysFile(file, (f) => readFileSync(f, "utf8"))).toBe("file-key-0001=Customer\n");
  });

  it("the command reads keys from --api-keys-file and USER_GROUPS_FAKE_API_KEYS, the admin token from USER_GROUPS_FAKE_ADMIN_TOKEN", async () => {
    const file = join(dir, "keys");
    writeFileSync(file, "# comment\nfile-key-0001=Customer\n\nfile-key-0002=Testing:ro\n", { mode: 0o600 });
    const run = runCli(["--api-keys-file", file], {
      ...process.env,
      USER_GROUPS_FAKE_API_KEYS: "env-key-0001=Testing,env-key-0002=Customer:ro",
      USER_GROUPS_FAKE_ADMIN_TOKEN: "admin-env-token-0001",
    });
    try {
      const url = await run.listening;
      const get = async (key: string) =>
        (
          await request(`${url}/api/user`, {
            method: "GET",
            headers: { authorization: `Token ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ name: "N", user_group_id: "k" }),
          }).then(async (r) => ({ status: r.statusCode, text: await r.body.text() }))
        ).status;
      expect(await get("file-key-0001")).toBe(200);
      expect(await get("file-key-0002")).toBe(403);
      expect(await get("env-key-0001")).toBe(200);
      expect(await get("env-key-0002")).toBe(200); // Customer's "k" exists now: a read-only GET may read it
      expect(await get("not-a-key")).toBe(401);
      expect(run.stderr()).not.toMatch(/key-000/);
      const admin = (headers: Record<string, string>) => request(`${url}/__admin/groups`, { headers }).then(async (r) => (await r.body.text(), r.statusCode));
      expect(await admin({})).toBe(401);
      expect(await admin({ "x-admin-token": "admin-env-token-0001" })).toBe(200);
    } finally {
      run.child.kill("SIGTERM");
      await run.exited;
    }
  });
});

describe("15. the data file's temp file", () => {
  it("never writes through a planted symlink, and leaves no temp file behind", async () => {
    const dataFile = join(dir, "state.json");
    const victim = join(dir, "victim.txt");
    writeFileSync(victim, "precious\n");
    symlinkSync(victim, join(dir, ".state.json.tmp"));
    const persisted = await start({ dataFile });
    try {
      expectOk(await call(persisted, "GET", { name: "A", user_group_id: "a" }), "GET");
    } finally {
      await persisted.close();
    }
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(dataFile).isFile()).toBe(true);
    expect(JSON.parse(readFileSync(dataFile, "utf8"))).toMatchObject({ groups: [expect.objectContaining({ user_group_id: "a" })] });
    expect((lstatSync(dataFile).mode & 0o777).toString(8)).toBe("600");
    expect(readdirSync(dir).filter((name) => name.startsWith(".state.json.") && name !== ".state.json.tmp")).toEqual([]);
  });
});
