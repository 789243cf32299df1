// Small node:http helpers: media type check, bounded body reading, JSON answers.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { UserGroupsError } from "../provider/wire/errors.js";
import { MAX_BODY_BYTES } from "../provider/wire/schemas.js";
import { ApiError, errorBody } from "./errors.js";

/** `application/json`, optionally with a UTF-8 charset parameter (W2); other parameters are ignored. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  if (header === "application/json") return true; // what nearly every client sends
  const [type = "", ...params] = header.split(";");
  if (type.trim().toLowerCase() !== "application/json") return false;
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq < 0) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    const value = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
    // The body is always decoded as UTF-8, so a different charset would be misread.
    if (name === "charset" && value !== "utf-8" && value !== "utf8") return false;
  }
  return true;
}

/** Thrown when the client went away mid-request: there is nobody to answer. */
export class ClientGone extends UserGroupsError {
  constructor() {
    super("client_gone", "client closed the connection");
    this.name = "ClientGone";
  }
}

function tooLarge(limit: number): ApiError {
  return new ApiError(413, "payload_too_large", `request body must be at most ${limit} bytes`, {
    Connection: "close",
  });
}

/**
 * Reads the body, counting bytes as they arrive. Past `limit` it rejects with 413
 * at once and stops keeping chunks, so the excess is never held in memory; a
 * declared Content-Length over the limit is refused before reading anything.
 */
export function readBody(req: IncomingMessage, res?: ServerResponse, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  // `Expect: 100-continue`: the client waits for this before sending the body, so
  // a request refused earlier (401, 413 by Content-Length, ...) never sends it.
  if (res !== undefined && /100-continue/i.test(req.headers.expect ?? "")) res.writeContinue();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("aborted", onGone);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        // The stream keeps flowing with no 'data' listener, so the rest is dropped as
        // it arrives; the 413's staged close (lingerAfterEarlyAnswer) bounds how long.
        req.on("error", () => {});
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      // No cleanup: nothing follows 'end' but a late error, which must still find a
      // listener, and settling a settled promise does nothing.
      resolve(chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onGone = (): void => {
      cleanup();
      reject(new ClientGone());
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("aborted", onGone);
  });
}

/** After an early `Connection: close` answer, the most a connection is read (and discarded) for... */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** ...and for how long, whichever ends first. */
export const LINGER_MS = 2_000;

/**
 * Staged close (RFC 9112 section 9.6) for an answer sent before the request body
 * was read, such as a 413. node:http ends a `Connection: close` response with
 * `socket.destroySoon()`: FIN, then close once flushed. With the client's body
 * still arriving, that close turns into a TCP reset, and a client that is still
 * writing fails with EPIPE before it reads the answer. So this connection half-closes
 * instead and keeps reading and discarding until the body ends, the client closes,
 * or LINGER_MAX_BYTES / LINGER_MS is reached. Call it before sending the answer.
 */
export function lingerAfterEarlyAnswer(req: IncomingMessage): void {
  const socket = req.socket;
  if (req.complete || socket.destroyed) return;
  let discarded = 0;
  let bodyEnded = false;
  let answered = false;
  let timer: NodeJS.Timeout | undefined;
  const closeNow = (): void => {
    clearTimeout(timer);
    socket.destroy();
  };
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) closeNow();
  });
  req.on("error", () => {});
  req.once("end", () => {
    bodyEnded = true;
    // Everything was read, so closing now is a clean FIN, once the answer is out.
    if (answered) socket.destroySoon();
  });
  socket.once("close", () => clearTimeout(timer));
  socket.destroySoon = (): void => {
    answered = true;
    if (bodyEnded) {
      Socket.prototype.destroySoon.call(socket);
      return;
    }
    socket.end();
    timer = setTimeout(closeNow, LINGER_MS);
    timer.unref();
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: ApiError): void {
  sendJson(res, error.status, errorBody(error.code, error.message), error.headers);
}

/** Path without query string; `/api/user/` and `/api/user` are the same path (W2). */
export function pathOf(url: string | undefined): string {
  const raw = url ?? "/";
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
