// Shared helpers for the fake-server tests: real HTTP over 127.0.0.1 with undici.
import { request } from "undici";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import type { z } from "zod";
import { OPERATIONS, errorResponseSchema, type ApiMethod } from "../../provider/wire/schemas.js";
import { startFakeServer, type FakeServer, type FakeServerOptions } from "../../fake-server/index.js";

export const KEYS = {
  customer: "customer-rw-key-0001",
  customerRo: "customer-ro-key-0002",
  testing: "testing-rw-key-0003",
  testingRo: "testing-ro-key-0004",
} as const;

export function start(extra: Partial<FakeServerOptions> = {}): Promise<FakeServer> {
  return startFakeServer({
    apiKeys: [
      { key: KEYS.customer, environment: "Customer" },
      { key: KEYS.customerRo, environment: "Customer", readOnly: true },
      { key: KEYS.testing, environment: "Testing" },
      { key: KEYS.testingRo, environment: "Testing", readOnly: true },
    ],
    ...extra,
  });
}

/** One server for the whole file (started with `extra`), emptied before each test; `onStart` receives it. */
export function useSharedServer(onStart: (server: FakeServer) => void, extra: Partial<FakeServerOptions> = {}): void {
  let server: FakeServer | undefined;
  beforeAll(async () => {
    server = await start(extra);
    onStart(server);
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(async () => {
    await server?.reset();
  });
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

export interface CallOptions {
  /** API key; null sends no Authorization header. */
  key?: string | null;
  /** Overrides the whole Authorization header. */
  authorization?: string;
  /** null sends no Content-Type. */
  contentType?: string | null;
  path?: string;
  /** Sent as is instead of JSON.stringify(body). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export async function call(server: FakeServer, method: string, body?: unknown, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEYS.customer : options.key;
  if (options.authorization !== undefined) headers["authorization"] = options.authorization;
  else if (key !== null) headers["authorization"] = `Token ${key}`;
  const contentType = options.contentType === undefined ? "application/json" : options.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const res = await request(`${server.url}${options.path ?? "/api/user"}`, {
    method: method as "GET",
    headers,
    ...(payload === undefined ? {} : { body: payload }),
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** Asserts a W3 failure: the status, the error code, and the exact body shape. */
export function expectError(reply: Reply, status: number, code: string): void {
  expect({ status: reply.status, code: (reply.json as { error?: { code?: string } } | undefined)?.error?.code }).toEqual({
    status,
    code,
  });
  expect(errorResponseSchema.safeParse(reply.json).success).toBe(true);
  expect(String(reply.headers["content-type"])).toMatch(/^application\/json/);
}

/** Asserts a success and that the body parses with the wire response schema of `method`. */
export function expectOk<M extends ApiMethod>(reply: Reply, method: M): z.infer<(typeof OPERATIONS)[M]["response"]> {
  expect(reply.status, reply.text).toBe(200);
  return OPERATIONS[method].response.parse(reply.json) as z.infer<(typeof OPERATIONS)[M]["response"]>;
}

export async function createGroup(
  server: FakeServer,
  id: string,
  extra: Record<string, unknown> = {},
  key: string = KEYS.customer,
): Promise<{ token: string; team_id: number }> {
  const reply = await call(server, "GET", { name: `Group ${id}`, user_group_id: id, ...extra }, { key });
  const body = expectOk(reply, "GET");
  expect(body.new_user_group).toBe(true);
  return { token: body.user_group.token, team_id: body.user_group.team_id };
}
