// Seeding (fake-server/seed.ts): groups with fixed tokens and team ids, from code
// and from a file given at start (--seed-file), checked whole before any is stored.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startFakeServer } from "../../fake-server/index.js";
import { runCli } from "./cli-process.js";
import { call, expectOk } from "./helpers.js";

const KEY = "seed-test-key-0001";
const TOKEN_A = "0123456789abcdef".repeat(4);
const TOKEN_B = "fedcba9876543210".repeat(4);
const dir = mkdtempSync(path.join(os.tmpdir(), "seed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("seeding from code", () => {
  it("serves seeded groups with their fixed token and team id; new groups get team ids past the seeded ones", async () => {
    const server = await startFakeServer({
      apiKeys: [{ key: KEY, environment: "Customer" }, { key: `${KEY}-t`, environment: "Testing" }],
      seed: [
        { user_group_id: "acme", name: "Acme", team_id: 700, token: TOKEN_A, mapping: { sales: "db1" }, properties: { tier: "gold" } },
        { user_group_id: "acme", name: "Acme test", environment: "Testing" },
      ],
    });
    try {
      const got = expectOk(await call(server, "GET", { name: "other", user_group_id: "acme" }, { key: KEY }), "GET");
      expect(got).toEqual({ success: 1, new_user_group: false, user_group: { team_id: 700, token: TOKEN_A, name: "Acme", provided_id: "acme", properties: { tier: "gold" } } });
      const testing = expectOk(await call(server, "GET", { name: "x", user_group_id: "acme" }, { key: `${KEY}-t` }), "GET");
      expect(testing.user_group.team_id).toBe(701);
      expect(testing.user_group.token).toMatch(/^[0-9a-f]{64}$/);
      const fresh = expectOk(await call(server, "GET", { name: "New", user_group_id: "new" }, { key: KEY }), "GET");
      expect(fresh.user_group.team_id).toBe(702);
      // The seeded token is the group's credential: it rotates like any other.
      expectOk(await call(server, "POST", { current_token: TOKEN_A }, { key: KEY }), "POST");
      expect(server.seed([{ user_group_id: "later", name: "Later", token: TOKEN_B }])).toHaveLength(1);
      expect(server.groups().find((g) => g.user_group_id === "later")?.token).toBe(TOKEN_B);
    } finally {
      await server.close();
    }
  });

  it("refuses a whole seed for one bad group (a repeated token or team id, a malformed token), naming the group, never the token", async () => {
    const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], seed: [{ user_group_id: "a", name: "A", team_id: 5, token: TOKEN_A }] });
    try {
      expect(() => server.seed([{ user_group_id: "b", name: "B" }, { user_group_id: "c", name: "C", token: TOKEN_A }])).toThrow(/seed group 1 .*"c".*token is already in use; nothing was seeded/);
      expect(() => server.seed([{ user_group_id: "d", name: "D", team_id: 5 }])).toThrow(/team_id is already in use/);
      expect(() => server.seed([{ user_group_id: "e", name: "E" }, { user_group_id: "e", name: "E2" }])).toThrow(/already in the seed/);
      let message = "";
      try {
        server.seed([{ user_group_id: "f", name: "F", token: "Secret-Looking-Token-Value" }]);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/token/);
      expect(message).not.toContain("Secret-Looking-Token-Value");
      expect(server.groups().map((g) => g.user_group_id)).toEqual(["a"]);
    } finally {
      await server.close();
    }
  });
});

describe("seeding from a file at start (--seed-file)", () => {
  it("the command serves the file's groups from its first request", async () => {
    const file = path.join(dir, "seed.json");
    writeFileSync(file, JSON.stringify({ groups: [{ user_group_id: "from-file", name: "From file", team_id: 31, token: TOKEN_B }] }));
    chmodSync(file, 0o600);
    const run = runCli(["--api-key", `${KEY}=Customer`, "--seed-file", file]);
    try {
      const url = await run.listening;
      const got = expectOk(await call({ url } as never, "GET", { name: "x", user_group_id: "from-file" }, { key: KEY }), "GET");
      expect(got.user_group).toMatchObject({ team_id: 31, token: TOKEN_B, name: "From file" });
    } finally {
      run.child.kill("SIGTERM");
      await run.exited;
    }
  });

  it("a bad seed file stops the command with exit 2 and a message that names the file, not its tokens", async () => {
    const file = path.join(dir, "bad.json");
    writeFileSync(file, JSON.stringify([{ user_group_id: "x", name: "X", token: "NOT-HEX-but-secret-0000" }]));
    const run = runCli(["--api-key", `${KEY}=Customer`, "--seed-file", file]);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain("bad.json");
    expect(run.stderr()).not.toContain("NOT-HEX-but-secret-0000");
  });
});
