// The emulator's default limits (docs/fake-server.md: idle 5 s, 512 connections,
// 256 per address, 10 s headers, 30 s requests) on the real objects of a server
// started with no option: the node:http server it made (captured as it is made),
// and the behaviour: the idle timeout it announces to clients and keeps (a silent
// connection closed at 5 s, not before), and the connection caps at work (the
// 257th idle socket of one address and the 513th of all evict an idle one). connections.unit.test.ts holds each rule with small
// limits; this file, that the defaults are the promised ones.
import type { Server } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { waitFor } from "../support/wait-for.js";
import { KEYS } from "./helpers.js";

const made = vi.hoisted(() => [] as Server[]);
vi.mock("node:http", async (importOriginal) => {
  const http = await importOriginal<typeof import("node:http")>();
  const createServer = ((...args: Parameters<typeof http.createServer>) => {
    const server = http.createServer(...args);
    made.push(server);
    return server;
  }) as typeof http.createServer;
  return { ...http, createServer, default: { ...http, createServer } };
});

let server: FakeServer;
let httpServer: Server;
const sockets: Socket[] = [];
beforeAll(async () => {
  // The unit tier shares modules between files (isolate: false): drop the ones loaded before this file, so
  // that the emulator is loaded again here and meets the mocked node:http.
  vi.resetModules();
  const { start } = await import("./helpers.js");
  server = await start(); // keys only: every limit at its default
  expect(made).toHaveLength(1);
  httpServer = made[0]!;
});
afterAll(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server.close();
});

function open(localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port: server.port, host: server.host, localAddress });
    sockets.push(socket);
    socket.on("error", () => {}); // an evicted socket may end in a reset
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

describe("a fake server started with no options", () => {
  it("cuts off headers after 10 s and whole requests after 30 s (node:http's own deadlines, checked at least every second)", () => {
    expect(httpServer.headersTimeout).toBe(10_000);
    expect(httpServer.requestTimeout).toBe(30_000);
    expect(httpServer.keepAliveTimeout).toBe(5_000);
    // Node checks those deadlines on this interval (30 s by default): a slow client is cut within about a second of its deadline.
    expect((httpServer as Server & { connectionsCheckingInterval?: number }).connectionsCheckingInterval).toBe(1_000);
  });

  it("tells a client its idle connection is closed after 5 s (Keep-Alive: timeout=5)", async () => {
    const socket = await open("127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    const headers = new Promise<string>((resolve) => socket.on("data", (chunk: string) => (text += chunk).includes("\r\n\r\n") && resolve(text)));
    socket.write(`GET /api/user HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token ${KEYS.customer}\r\nContent-Length: 0\r\n\r\n`);
    expect(await headers).toMatch(/^HTTP\/1\.1 \d{3} [\s\S]*\r\nKeep-Alive: timeout=5\r\n/i);
    socket.destroy();
    await waitFor(() => server.connections().open === 0, { what: "the probe's connection closed" });
  });

  it("holds 256 idle connections of one address and 512 in all; one more takes the place of an idle one", async () => {
    const before = server.connections();
    expect(before.open).toBe(0);
    await Promise.all(Array.from({ length: 256 }, () => open("127.0.0.2")));
    await waitFor(() => server.connections().open === 256, { what: "256 connections of 127.0.0.2 open" });
    expect(server.connections().evicted).toBe(before.evicted);
    await open("127.0.0.2"); // the 257th of that address
    await waitFor(() => server.connections().evicted === before.evicted + 1, { what: "one idle socket of 127.0.0.2 evicted" });
    await Promise.all(Array.from({ length: 256 }, () => open("127.0.0.3")));
    await waitFor(() => server.connections().open === 512, { what: "512 connections open" });
    expect(server.connections().evicted).toBe(before.evicted + 1);
    await open("127.0.0.4"); // the 513th
    await waitFor(() => server.connections().evicted === before.evicted + 2, { what: "one idle socket evicted at 512" });
    expect(server.connections()).toMatchObject({ open: 512, refused: 0 });
  }, 60_000);

  it("closes a connection that sends nothing after 5 s, not before", async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await waitFor(() => server.connections().open === 0, { what: "the earlier connections closed" });
    const idleBefore = server.connections().idleClosed;
    const started = performance.now();
    const socket = await open("127.0.0.5");
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const elapsed = performance.now() - started;
    expect(server.connections().idleClosed).toBe(idleBefore + 1);
    // Timers fire late under load, never early: 5 s is the floor; the ceiling leaves room for a busy machine.
    expect(elapsed).toBeGreaterThanOrEqual(4_900);
    expect(elapsed).toBeLessThan(15_000);
  }, 30_000);
});
