// Who may hold a connection, and for how long. Open connections cost nothing to
// hold, so with only a global cap 300 sockets that never send a byte kept every
// real client out (issue #23 item 3). Rules:
// - idle: a connection the server is not working on (no request whose headers are
//   in and whose answer is not finished) that receives no byte for `idleTimeoutMs`
//   is closed: before its first byte, stalled inside its headers, between requests.
//   A slow client that keeps sending is left alone (headersTimeout and
//   requestTimeout bound it);
// - caps: at most `maxConnectionsPerAddress` from one remote address and
//   `maxConnections` in all. At a cap, a new connection takes the place of the
//   oldest one at rest (no request in progress and no byte of a next one; one that
//   never sent a byte goes first); only when none is at rest is the new one refused.
// So holding sockets open gains an attacker nothing: a real client that connects
// and sends its request is served at once, whatever the number of idle sockets.
import type { Socket } from "node:net";

export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  readonly idleTimeoutMs: number;
}

/** What the guard has done since the server started (`FakeServer.connections()`). */
export interface ConnectionStats {
  /** Connections open now. */
  readonly open: number;
  /** Of those, the ones with a request in progress (headers in, answer not finished). */
  readonly busy: number;
  /** The most that were open at once. */
  readonly peakOpen: number;
  /** Closed because they sent nothing within the idle timeout. */
  readonly idleClosed: number;
  /** Closed to make room for a new connection at a cap. */
  readonly evicted: number;
  /** New connections closed at once: a cap was reached and every connection there was busy. */
  readonly refused: number;
}

interface Tracked {
  readonly socket: Socket;
  readonly address: string;
  /** Requests in progress on it (more than one only with pipelining). */
  busy: number;
  /** socket.bytesRead when it last came to rest (opened, or a request ended). */
  bytesAtRest: number;
  /** socket.bytesRead when the idle timer was last armed or fired. */
  bytesSeen: number;
  timer: NodeJS.Timeout | undefined;
}

// socket.bytesRead also counts what node:http's parser consumes directly ('data' is not emitted then).
const atRest = (t: Tracked): boolean => t.busy === 0 && t.socket.bytesRead === t.bytesAtRest;

/** `::ffff:127.0.0.1` and `127.0.0.1` are one client. */
export function addressKey(remoteAddress: string | undefined): string {
  const address = remoteAddress ?? "";
  return address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
}

export class ConnectionGuard {
  /** Every open connection, oldest first (Map keeps insertion order). */
  private readonly all = new Map<Socket, Tracked>();
  private readonly byAddress = new Map<string, Map<Socket, Tracked>>();
  private peakOpen = 0;
  private idleClosed = 0;
  private evicted = 0;
  private refused = 0;

  constructor(private readonly limits: ConnectionLimits) {}

  /** A new connection: admitted (perhaps in place of one at rest) or closed at once. */
  admit(socket: Socket): void {
    const address = addressKey(socket.remoteAddress);
    const sameAddress = this.byAddress.get(address);
    if (!this.makeRoom(sameAddress, this.limits.maxConnectionsPerAddress) || !this.makeRoom(this.all, this.limits.maxConnections)) {
      this.refused += 1;
      socket.destroy();
      return;
    }
    const tracked: Tracked = { socket, address, busy: 0, bytesAtRest: 0, bytesSeen: 0, timer: undefined };
    this.all.set(socket, tracked);
    const peers = sameAddress ?? new Map<Socket, Tracked>();
    peers.set(socket, tracked);
    this.byAddress.set(address, peers);
    this.peakOpen = Math.max(this.peakOpen, this.all.size);
    this.armIdleTimer(tracked);
    socket.once("close", () => this.forget(tracked));
  }

  /** A request's headers arrived on `socket`: it is busy until `requestEnded`. */
  requestStarted(socket: Socket): void {
    const tracked = this.all.get(socket);
    if (tracked === undefined) return;
    tracked.busy += 1;
    clearTimeout(tracked.timer);
    tracked.timer = undefined;
  }

  /** Its answer is finished (or the request was abandoned). */
  requestEnded(socket: Socket): void {
    const tracked = this.all.get(socket);
    if (tracked === undefined || tracked.busy === 0) return;
    tracked.busy -= 1;
    if (tracked.busy > 0) return;
    tracked.bytesAtRest = socket.bytesRead;
    this.armIdleTimer(tracked);
  }

  stats(): ConnectionStats {
    let busy = 0;
    for (const tracked of this.all.values()) if (tracked.busy > 0) busy += 1;
    return { open: this.all.size, busy, peakOpen: this.peakOpen, idleClosed: this.idleClosed, evicted: this.evicted, refused: this.refused };
  }

  /** True when `group` has room for one more, after closing its oldest connection at rest if it had to. */
  private makeRoom(group: ReadonlyMap<Socket, Tracked> | undefined, cap: number): boolean {
    if (group === undefined || group.size < cap) return true;
    const victim = oldestAtRest(group);
    if (victim === undefined) return false;
    this.evicted += 1;
    this.forget(victim);
    victim.socket.destroy();
    return true;
  }

  /** Closes the connection once a whole idleTimeoutMs passes with no byte and no request in progress. */
  private armIdleTimer(tracked: Tracked): void {
    clearTimeout(tracked.timer);
    tracked.bytesSeen = tracked.socket.bytesRead;
    tracked.timer = setTimeout(() => {
      tracked.timer = undefined;
      if (tracked.busy > 0 || tracked.socket.destroyed) return;
      if (tracked.socket.bytesRead !== tracked.bytesSeen) {
        this.armIdleTimer(tracked); // still sending: look again a period later
        return;
      }
      this.idleClosed += 1;
      this.forget(tracked);
      tracked.socket.destroy();
    }, this.limits.idleTimeoutMs);
    tracked.timer.unref();
  }

  private forget(tracked: Tracked): void {
    clearTimeout(tracked.timer);
    this.all.delete(tracked.socket);
    const peers = this.byAddress.get(tracked.address);
    peers?.delete(tracked.socket);
    if (peers?.size === 0) this.byAddress.delete(tracked.address);
  }
}

/** The oldest connection that never sent a byte, else the oldest one at rest between requests. */
function oldestAtRest(group: ReadonlyMap<Socket, Tracked>): Tracked | undefined {
  let betweenRequests: Tracked | undefined;
  for (const tracked of group.values()) {
    if (!atRest(tracked)) continue;
    if (tracked.socket.bytesRead === 0) return tracked;
    betweenRequests ??= tracked;
  }
  return betweenRequests;
}
