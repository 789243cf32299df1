// An endpoint that accepts connections and never answers: a hung service or
// collector, a firewall that drops. `close()` ends the sockets it holds.
import net from "node:net";

export interface SilentListener {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  close(): Promise<void>;
}

export async function startSilentListener(): Promise<SilentListener> {
  const held = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    held.add(socket);
    socket.on("close", () => held.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
