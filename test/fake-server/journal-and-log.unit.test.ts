// The request journal (bounded, redacted) and the opt-in request log (never a secret).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { REDACTED } from "../../fake-server/journal.js";
import { KEYS, call, createGroup, expectOk, start } from "./helpers.js";

let server: FakeServer;
const lines: string[] = [];
beforeAll(async () => {
  server = await start({ log: (line) => lines.push(line) });
});
afterAll(async () => {
  await server.close();
});

describe("journal redaction and log hygiene", () => {
  it("no token or API key appears anywhere in the journal or the log", async () => {
    const secrets = new Set<string>([...Object.values(KEYS), "unknown-but-secret-key-42"]);
    const a = await createGroup(server, "acme");
    const b = await createGroup(server, "beta", {}, KEYS.testing);
    secrets.add(a.token);
    secrets.add(b.token);
    const rotated = expectOk(await call(server, "POST", { current_token: a.token }), "POST").user_group.token;
    secrets.add(rotated);
    // Secrets in unexpected places: other fields, nested, in keys, in the path, unknown key.
    await call(server, "PUT", { user_group_id: "acme", name: `token is ${rotated}`, properties: { nested: { token: "plain", [KEYS.customer]: [b.token] } } });
    await call(server, "GET", { name: KEYS.testing, user_group_id: "x" }, { key: "unknown-but-secret-key-42" });
    await call(server, "GET", { name: "n", user_group_id: "x" }, { path: `/api/user/${rotated}` });
    await call(server, "DELETE", { current_token: b.token, user_group_id: "beta" }, { key: KEYS.testing });
    await call(server, "POST", { current_token: "not-issued-but-secret" });

    const journal = server.journal();
    expect(journal.length).toBe(8);
    const text = JSON.stringify(journal) + "\n" + lines.join("\n");
    for (const secret of [...secrets, "not-issued-but-secret"]) expect(text).not.toContain(secret);

    const rotate = journal.find((e) => e.method === "POST");
    expect(rotate?.body).toEqual({ current_token: REDACTED });
    const put = journal.find((e) => e.method === "PUT");
    expect(put?.body).toEqual({
      user_group_id: "acme",
      name: `token is ${REDACTED}`,
      properties: { nested: { token: REDACTED, [REDACTED]: [REDACTED] } },
    });
    expect(journal.find((e) => e.status === 404 && e.code === "not_found")?.path).toBe(`/api/user/${REDACTED}`);
  });

  it("logs one line per request with method, path, status, duration and environment", async () => {
    lines.length = 0;
    await call(server, "GET", { name: "A", user_group_id: "log-me" }, { key: KEYS.testing });
    await call(server, "PATCH", {});
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ GET \/api\/user 200 [\d.]+ms Testing$/);
    expect(lines[1]).toMatch(/ PATCH \/api\/user 405 [\d.]+ms -$/);
  });

  it("stamps each entry and log line with the request's arrival time, in ISO 8601", async () => {
    lines.length = 0;
    const before = Date.now();
    await call(server, "GET", { name: "A", user_group_id: "stamped" });
    const after = Date.now();
    const entry = server.journal().at(-1);
    expect(entry?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const at = Date.parse(entry?.time ?? "");
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
    expect(lines[0]?.startsWith(`${entry?.time} GET /api/user 200 `)).toBe(true);
  });

  it("the journal is a ring buffer of journalSize entries, oldest dropped first", async () => {
    const small = await start({ journalSize: 3 });
    try {
      for (let i = 0; i < 5; i++) await call(small, "GET", { name: "A", user_group_id: `g${i}` });
      expect(small.journal().map((e) => (e.body as { user_group_id: string }).user_group_id)).toEqual(["g2", "g3", "g4"]);
    } finally {
      await small.close();
    }
  });

  it("logging is off by default", async () => {
    const quiet = await start();
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      await call(quiet, "GET", { name: "A", user_group_id: "a" });
    } finally {
      process.stderr.write = original;
      await quiet.close();
    }
    expect(writes.filter((w) => w.includes("/api/user"))).toEqual([]);
  });
});
