// Holding connections open (issue #23 item 3): idle sockets are closed within the
// idle timeout, one address holds at most its cap, and a real client that
// connects and sends its request is served at once however many idle sockets
// are open. A slow client that keeps sending, and a request the server is still
// working on, are never cut off.
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { parseCli } from "../../fake-server/cli-args.js";
import type { FakeServer, FakeServerOptions } from "../../fake-server/index.js";
import { readFileSync } from "node:fs";
import path from "node:path";
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, resolveOptions } from "../../fake-server/options.js";
import { waitFor } from "../support/wait-for.js";
import { KEYS, call, expectOk, start } from "./helpers.js";

const servers: FakeServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await server.close();
});

async function serve(extra: Partial<FakeServerOptions> = {}): Promise<FakeServer> {
  const server = await start(extra);
  servers.push(server);
  return server;
}

interface Conn {
  readonly socket: Socket;
  /** Everything the server sent. */
  text(): string;
  readonly closed: Promise<void>;
  isClosed(): boolean;
}

/** A raw TCP connection (from `localAddress`, another loopback address, when given), read as it arrives. */
function openConn(server: FakeServer, localAddress?: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port: server.port, host: server.host, ...(localAddress === undefined ? {} : { localAddress }) });
    sockets.push(socket);
    let text = "";
    let isClosed = false;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", () => {}); // a refused or evicted connection may end in a reset
    const closed = new Promise<void>((done) => socket.once("close", () => ((isClosed = true), done())));
    socket.once("connect", () => resolve({ socket, text: () => text, closed, isClosed: () => isClosed }));
    socket.once("error", reject);
  });
}

function openMany(server: FakeServer, count: number, localAddress?: string): Promise<Conn[]> {
  return Promise.all(Array.from({ length: count }, () => openConn(server, localAddress)));
}

function apiRequest(body: unknown, method = "GET"): string {
  const text = JSON.stringify(body);
  return (
    `${method} /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${KEYS.customer}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
  );
}

const answered = (conn: Conn): boolean => /^HTTP\/1\.1 \d{3} [\s\S]*\r\n\r\n\{[\s\S]*\}$/.test(conn.text());

describe("idle connections", () => {
  it("300 sockets that never send a byte do not keep a real client out (default caps)", async () => {
    // A long idle timeout: the request can only be served because idle sockets make room, not because they timed out.
    const server = await serve({ idleTimeoutMs: 120_000 });
    const idle = await openMany(server, 300);
    await waitFor(() => server.connections().open === DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, { what: "the cap to be reached" });

    const created = await call(server, "GET", { name: "Acme", user_group_id: "acme" });
    expect(expectOk(created, "GET").new_user_group).toBe(true);
    // Served while the idle ones it did not displace are still open.
    expect(idle.filter((conn) => !conn.isClosed()).length).toBeGreaterThanOrEqual(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS - 1);
    expect(server.connections()).toMatchObject({ refused: 0, peakOpen: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS });
  });

  it("idle sockets from another address fill only that address's share", async () => {
    const server = await serve({ idleTimeoutMs: 120_000, maxConnectionsPerAddress: 20, maxConnections: 100 });
    const idle = await openMany(server, 300, "127.0.0.2");
    await waitFor(() => idle.filter((conn) => conn.isClosed()).length === 280, { what: "the 280 over the cap to be closed" });
    expect(server.connections().open).toBe(20);

    const conn = await openConn(server, "127.0.0.1");
    conn.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await waitFor(() => answered(conn), { what: "an answer" });
    expect(conn.text()).toMatch(/^HTTP\/1\.1 200 /);
    expect(idle.filter((c) => !c.isClosed()).length).toBe(20);
  });

  it("the server closes sockets that send nothing within the idle timeout", async () => {
    const server = await serve({ idleTimeoutMs: 300 });
    const idle = await openMany(server, 50);
    await Promise.all(idle.map((conn) => conn.closed));
    expect(idle.every((conn) => conn.text() === "")).toBe(true);
    expect(server.connections()).toMatchObject({ open: 0, idleClosed: 50, evicted: 0, refused: 0 });
  });

  it("a connection that stalls inside its headers is closed after the idle timeout, before the headers timeout", async () => {
    const server = await serve({ idleTimeoutMs: 300, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    const conn = await openConn(server);
    conn.socket.write("PUT /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    await conn.closed;
    expect(server.connections().idleClosed).toBe(1);
  });

  it("between requests, a kept-alive connection is closed once idle", async () => {
    const server = await serve({ idleTimeoutMs: 300 });
    const conn = await openConn(server);
    conn.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await conn.closed;
    expect(conn.text()).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("clients that are not idle", () => {
  it("a slow client that keeps sending is served, however much longer than the idle timeout it takes", async () => {
    const server = await serve({ idleTimeoutMs: 1_000 });
    const conn = await openConn(server);
    const request = apiRequest({ name: "Slow but sending", user_group_id: "slow", properties: { note: "x".repeat(40) } });
    // 4 bytes every 50 ms: headers and body take about three idle timeouts.
    for (let at = 0; at < request.length; at += 4) {
      conn.socket.write(request.slice(at, at + 4));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await waitFor(() => answered(conn), { what: "an answer" });
    expect(conn.text()).toMatch(/^HTTP\/1\.1 200 /);
    expect(server.groups().map((g) => g.user_group_id)).toEqual(["slow"]);
    expect(server.connections().idleClosed).toBe(0);
  });

  it("a request the server works on for longer than the idle timeout is answered", async () => {
    const server = await serve({ idleTimeoutMs: 200 });
    server.setFaults([{ method: "GET", action: "delay", delayMs: 1_000 }]);
    const conn = await openConn(server);
    conn.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await waitFor(() => answered(conn), { what: "an answer" });
    expect(conn.text()).toMatch(/^HTTP\/1\.1 200 /);
    expect(server.connections().idleClosed).toBe(0);
  });
});

describe("caps", () => {
  it("past the per-address cap, a new connection is refused while every connection of that address is busy", async () => {
    const server = await serve({ maxConnectionsPerAddress: 3 });
    const busy = await openMany(server, 3);
    // Headers in, body still on its way: each is a request in progress.
    for (const [i, conn] of busy.entries()) conn.socket.write(apiRequest({ name: `G${i}`, user_group_id: `g${i}` }).slice(0, -5));
    await waitFor(() => server.connections().busy === 3, { what: "three requests in progress" });

    const fourth = await openConn(server);
    fourth.socket.write(apiRequest({ name: "Late", user_group_id: "late" }));
    await fourth.closed;
    expect(fourth.text()).toBe("");
    expect(busy.some((conn) => conn.isClosed())).toBe(false);
    expect(server.connections()).toMatchObject({ open: 3, busy: 3, refused: 1, evicted: 0 });
  });

  it("at a cap, a new connection takes the place of the oldest one at rest, never of one mid-request", async () => {
    const server = await serve({ maxConnections: 3, idleTimeoutMs: 120_000 });
    const slow = await openConn(server); // mid-request: has sent part of its headers
    slow.socket.write("GET /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const rested = await openConn(server); // finished a request, kept alive
    rested.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await waitFor(() => answered(rested), { what: "an answer" });
    const silent = await openConn(server); // never sent a byte
    await waitFor(() => server.connections().open === 3, { what: "three connections" });

    const first = await openConn(server);
    await silent.closed; // a silent one goes before one between requests
    first.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await waitFor(() => answered(first), { what: "an answer" });
    const second = await openConn(server);
    await rested.closed;
    expect(slow.isClosed()).toBe(false);
    second.socket.write(apiRequest({ name: "Acme", user_group_id: "acme" }));
    await waitFor(() => answered(second), { what: "an answer" });
    // Both are now between requests: the next newcomer displaces the older of them, still not the slow one.
    await openConn(server);
    await first.closed;
    expect(slow.isClosed()).toBe(false);
    expect(second.isClosed()).toBe(false);
    expect(server.connections()).toMatchObject({ open: 3, evicted: 3, refused: 0 });
  });

  it("the command takes the limits as flags, with defaults", () => {
    expect(parseCli(["--idle-timeout", "2000", "--max-connections-per-address", "32"])).toMatchObject({
      kind: "run",
      config: { idleTimeoutMs: 2000, maxConnectionsPerAddress: 32 },
    });
    expect(parseCli([])).toMatchObject({ kind: "run", config: {} });
    expect(parseCli(["--idle-timeout", "0"])).toMatchObject({ kind: "error", message: /--idle-timeout must be a whole number/ });
  });

  it("a server started with no options has the limits docs/fake-server.md promises: idle 5 s, 512 connections, 10 s headers, 30 s requests", () => {
    const limits = { idleTimeoutMs: 5_000, maxConnections: 512, maxConnectionsPerAddress: 256, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };
    expect(resolveOptions({ apiKeys: [{ key: KEYS.customer, environment: "Customer" }] })).toMatchObject(limits);
    // The flags' table says the same defaults (a changed default changes the docs too).
    const docs = readFileSync(path.join(__dirname, "../../docs/fake-server.md"), "utf8");
    const documented = (flag: string) => Number(new RegExp(`\\| \`--${flag} [A-Z]+\` \\|[^\\n]*?Default (\\d+)`).exec(docs)?.[1]);
    expect({
      idleTimeoutMs: documented("idle-timeout"),
      maxConnections: documented("max-connections"),
      maxConnectionsPerAddress: documented("max-connections-per-address"),
      headersTimeoutMs: documented("headers-timeout"),
      requestTimeoutMs: documented("request-timeout"),
    }).toEqual(limits);
  });
});
