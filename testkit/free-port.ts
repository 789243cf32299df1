// Ports for tests and tools that run side by side (vitest runs three files at once).
import { connect, createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: bound to port 0, then released. Another process may take it
 * before the caller binds it, so a caller that starts a server on it retries with another on EADDRINUSE (as
 * testkit/postgres.ts, otel-collector.ts and jepsen/toxiproxy.ts do). A server of our own listens on port 0 and
 * reports its port instead. Never use it for "a port nothing listens on": that is refusedPort().
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Privileged ports of services nobody runs on a test machine (tcpmux, echo, discard, daytime): a port below 1024 is
 * never handed out for port 0 and no test server binds one, so unlike a released port none of the other files
 * running meanwhile can start listening on it.
 */
const NEVER_HANDED_OUT = [1, 7, 9, 13];

/** A port on 127.0.0.1 whose connections are refused (checked), for "the service is down" cases. */
export async function refusedPort(): Promise<number> {
  for (const port of NEVER_HANDED_OUT) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(false);
      });
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
    });
    if (refused) return port;
  }
  throw new Error(`something listens on every one of 127.0.0.1's ports ${NEVER_HANDED_OUT.join(", ")}: no port to be refused on`);
}
