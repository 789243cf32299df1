// An emulator changed in one behaviour: a proxy in front of the fake server that
// rewrites one kind of request or answer. The conformance kit's tests run it
// against each such mutant and expect the change to be reported.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { request } from "undici";

export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

export interface ProxiedAnswer {
  status: number;
  headers: Record<string, string>;
  /** The answer's JSON (undefined when it was not JSON: then `text` is sent). */
  json: unknown;
  text: string;
}

export interface Mutation {
  readonly name: string;
  /** The check the conformance kit must report (at least). */
  readonly reportedBy: string;
  /** Rewrites the request, or answers it without the emulator. */
  readonly request?: (req: ProxiedRequest) => ProxiedRequest | ProxiedAnswer;
  /** Rewrites the emulator's answer. */
  readonly answer?: (req: ProxiedRequest, answer: ProxiedAnswer) => ProxiedAnswer;
}

const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const jsonOf = (buffer: Buffer): Record<string, unknown> => {
  try {
    return obj(JSON.parse(buffer.toString("utf8")));
  } catch {
    return {};
  }
};
const error = (status: number, code: string): ProxiedAnswer => ({
  status,
  headers: { "content-type": "application/json" },
  json: { success: 0, error: { code, message: "mutant" } },
  text: "",
});

/** At least ten emulators each changed in one behaviour: an error code, a status, an answer field, idempotency, a limit. */
export const MUTATIONS: readonly Mutation[] = [
  {
    name: "error code: an unknown id answers not_found instead of user_group_not_found",
    reportedBy: "put-unknown",
    answer: (_req, a) => (obj(obj(a.json)["error"])["code"] === "user_group_not_found" ? { ...a, json: { success: 0, error: { code: "not_found", message: "x" } } } : a),
  },
  { name: "status: an unknown key gets 403, not 401", reportedBy: "auth-unknown-key", answer: (_req, a) => (a.status === 401 ? { ...a, status: 403 } : a) },
  {
    name: "answer field: GET's user_group lacks provided_id",
    reportedBy: "get-creates",
    answer: (req, a) => {
      if (req.method !== "GET" || a.status !== 200) return a;
      const { provided_id: _gone, ...rest } = obj(obj(a.json)["user_group"]);
      return { ...a, json: { ...obj(a.json), user_group: rest } };
    },
  },
  {
    name: "idempotency: GET of an existing id says new_user_group true",
    reportedBy: "get-existing-takes-no-action",
    answer: (req, a) => (req.method === "GET" && a.status === 200 ? { ...a, json: { ...obj(a.json), new_user_group: true } } : a),
  },
  {
    name: "limit: names over 100 characters are refused",
    reportedBy: "get-name-at-limit",
    request: (req) => (req.method === "GET" && String(jsonOf(req.body)["name"] ?? "").length > 100 ? error(400, "invalid_name") : req),
  },
  { name: "status: a wrong media type gets 400, not 415", reportedBy: "media-text", answer: (_req, a) => (a.status === 415 ? { ...error(400, "invalid_body") } : a) },
  {
    name: "answer field: DELETE answers an extra field",
    reportedBy: "delete-deletes",
    answer: (req, a) => (req.method === "DELETE" && a.status === 200 ? { ...a, json: { success: 1, deleted: true } } : a),
  },
  {
    name: "answer field: PUT answers with new_user_group",
    reportedBy: "put-updates",
    answer: (req, a) => (req.method === "PUT" && a.status === 200 ? { ...a, json: { ...obj(a.json), new_user_group: false } } : a),
  },
  {
    name: "header: 405 without Allow",
    reportedBy: "method-other",
    answer: (_req, a) => {
      if (a.status !== 405) return a;
      const { allow: _allow, ...headers } = a.headers;
      return { ...a, headers };
    },
  },
  {
    name: "limit: a mapping of 257 keys is accepted",
    reportedBy: "mapping-too-many-keys",
    request: (req) => {
      const body = jsonOf(req.body);
      const mapping = obj(body["mapping"]);
      if (Object.keys(mapping).length <= 256) return req;
      return { ...req, body: Buffer.from(JSON.stringify({ ...body, mapping: Object.fromEntries(Object.entries(mapping).slice(0, 256)) })) };
    },
  },
  { name: "status: an id mismatch gets 400, not 409", reportedBy: "delete-id-mismatch", answer: (_req, a) => (a.status === 409 ? { ...a, status: 400 } : a) },
  {
    name: "error body: failures say success false, not 0",
    reportedBy: "auth-missing",
    answer: (_req, a) => (a.status >= 400 && obj(a.json)["success"] === 0 ? { ...a, json: { ...obj(a.json), success: false } } : a),
  },
  {
    name: "idempotency: rotation keeps the old token working (answers the old token)",
    reportedBy: "post-rotates",
    request: (req) => req,
    answer: (req, a) => {
      if (req.method !== "POST" || a.status !== 200) return a;
      const sent = String(jsonOf(req.body)["current_token"] ?? "");
      return { ...a, json: { ...obj(a.json), user_group: { ...obj(obj(a.json)["user_group"]), token: sent } } };
    },
  },
];

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A proxy at a loopback URL that forwards to `target` with `mutation` applied. */
export async function startMutantProxy(target: string, mutation: Mutation): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === "string" && !["host", "content-length", "connection", "transfer-encoding"].includes(name)) headers[name] = value;
      }
      let forwarded: ProxiedRequest | ProxiedAnswer = { method: req.method ?? "GET", path: req.url ?? "/", headers, body: await readAll(req) };
      if (mutation.request !== undefined) forwarded = mutation.request(forwarded);
      let answer: ProxiedAnswer;
      if ("status" in forwarded) {
        answer = forwarded;
      } else {
        const out = await request(`${target}${forwarded.path}`, {
          method: forwarded.method as "GET",
          headers: forwarded.headers,
          ...(forwarded.body.length > 0 ? { body: forwarded.body } : {}),
        });
        const text = await out.body.text();
        const outHeaders: Record<string, string> = {};
        for (const [name, value] of Object.entries(out.headers)) if (typeof value === "string" && !["content-length", "connection", "keep-alive", "transfer-encoding"].includes(name)) outHeaders[name] = value;
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        answer = { status: out.statusCode, headers: outHeaders, json, text };
        if (mutation.answer !== undefined) answer = mutation.answer(forwarded, answer);
      }
      const body = answer.json === undefined ? answer.text : JSON.stringify(answer.json);
      res.writeHead(answer.status, { ...answer.headers, "content-length": String(Buffer.byteLength(body)) });
      res.end(body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no address");
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
