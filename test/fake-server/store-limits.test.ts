// Issue #39 item 7: the emulator's store has limits. 150 creates of ~1 MB of
// properties each used to take its memory from 76 MB to 291 MB; now the number
// of groups, one group's bytes and all groups' bytes are bounded (flags and
// options with defaults), a write past one answered 413 group_too_large or 507
// storage_full with the contract's error body, and nothing changed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCli } from "../../fake-server/cli-args.js";
import type { FakeServer } from "../../fake-server/index.js";
import { DEFAULT_MAX_GROUP_BYTES, DEFAULT_MAX_GROUPS, DEFAULT_MAX_TOTAL_BYTES, resolveOptions } from "../../fake-server/options.js";
import { groupBytes } from "../../fake-server/store.js";
import { runCli } from "./cli-process.js";
import { KEYS, call, createGroup, expectError, expectOk, start } from "./helpers.js";

const ids = (server: FakeServer) => server.groups().map((g) => g.user_group_id).sort();

describe("the store's limits", () => {
  let server: FakeServer;
  beforeAll(async () => {
    server = await start({ maxGroups: 4, maxGroupBytes: 2_000, maxTotalBytes: 4_000 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("has documented defaults: 100,000 groups, 1 MiB a group, 256 MiB in all", () => {
    const defaults = resolveOptions({ apiKeys: [{ key: "k", environment: "Customer" }] });
    expect([defaults.maxGroups, defaults.maxGroupBytes, defaults.maxTotalBytes]).toEqual([100_000, 1024 * 1024, 256 * 1024 * 1024]);
    expect([DEFAULT_MAX_GROUPS, DEFAULT_MAX_GROUP_BYTES, DEFAULT_MAX_TOTAL_BYTES]).toEqual([100_000, 1_048_576, 268_435_456]);
    const doc = readFileSync(join(__dirname, "../../docs/fake-server.md"), "utf8");
    for (const flag of ["--max-groups N", "--max-group-bytes N", "--max-total-bytes N"]) expect(doc).toContain(`| \`${flag}\` |`);
  });

  it("a group over maxGroupBytes: 413 group_too_large, on create and on update, and nothing changes", async () => {
    await server.reset();
    const big = { blob: "b".repeat(2_000) };
    const create = await call(server, "GET", { name: "Big", user_group_id: "big", properties: big });
    expectError(create, 413, "group_too_large");
    expect((create.json as { error: { message: string } }).error.message).toMatch(/limit is 2000 \(maxGroupBytes, --max-group-bytes\)/);
    expect(ids(server)).toEqual([]);
    await createGroup(server, "small", { properties: { plan: "team" } });
    expectError(await call(server, "PUT", { user_group_id: "small", properties: big }), 413, "group_too_large");
    expect(server.groups()[0]!.properties).toEqual({ plan: "team" });
    // Just under the limit is fine (the size is the id, name, mapping and properties as JSON).
    const fits = { blob: "c".repeat(2_000 - groupBytes({ user_group_id: "small", name: "Group small", mapping: {}, properties: { blob: "" } })) };
    expectOk(await call(server, "PUT", { user_group_id: "small", properties: fits }), "PUT");
    expect(server.groups()[0]!.properties).toEqual(fits);
  });

  it("at maxGroups (both environments together): a create is 507 storage_full; existing groups still answer; a delete makes room", async () => {
    await server.reset();
    const tokens = [await createGroup(server, "a"), await createGroup(server, "b"), await createGroup(server, "c", {}, KEYS.testing), await createGroup(server, "e")];
    const full = await call(server, "GET", { name: "D", user_group_id: "d" });
    expectError(full, 507, "storage_full");
    expect((full.json as { error: { message: string } }).error.message).toMatch(/holds 4 groups, its limit \(maxGroups, --max-groups 4\)/);
    // Both environments count together.
    expectError(await call(server, "GET", { name: "D", user_group_id: "d" }, { key: KEYS.testing }), 507, "storage_full");
    expect(expectOk(await call(server, "GET", { name: "A", user_group_id: "a" }), "GET").new_user_group).toBe(false);
    expectOk(await call(server, "PUT", { user_group_id: "a", name: "A renamed" }), "PUT");
    expectOk(await call(server, "POST", { current_token: tokens[1]!.token }), "POST");
    expect(ids(server)).toEqual(["a", "b", "c", "e"]);
    expectOk(await call(server, "DELETE", { current_token: tokens[0]!.token }), "DELETE");
    await createGroup(server, "d");
    expect(ids(server)).toEqual(["b", "c", "d", "e"]);
  });

  it("at maxTotalBytes: a create or a growing update is 507 storage_full; a shrinking one passes; reset frees all", async () => {
    await server.reset();
    const blob = (n: number) => ({ blob: "t".repeat(n) });
    // Each group costs its properties and ~31 bytes (id, name, empty mapping, the JSON around them).
    await createGroup(server, "t1", { properties: blob(1_000) });
    await createGroup(server, "t2", { properties: blob(1_900) });
    await createGroup(server, "t3", { properties: blob(1_000) });
    expect(server.groups()).toHaveLength(3);
    const create = await call(server, "GET", { name: "T4", user_group_id: "t4" }, { key: KEYS.testing });
    expectError(create, 507, "storage_full");
    expect((create.json as { error: { message: string } }).error.message).toMatch(/would pass its limit of 4000 \(maxTotalBytes, --max-total-bytes\)/);
    expectError(await call(server, "PUT", { user_group_id: "t1", properties: blob(1_100) }), 507, "storage_full");
    expect(server.groups().find((g) => g.user_group_id === "t1")!.properties).toEqual(blob(1_000));
    // Shrinking and same-size writes pass; the room they free takes a new group.
    expectOk(await call(server, "PUT", { user_group_id: "t2", name: "Group t2" }), "PUT");
    expectOk(await call(server, "PUT", { user_group_id: "t1", properties: null }), "PUT");
    await createGroup(server, "t4", { properties: blob(900) }, KEYS.testing);
    await server.reset();
    await createGroup(server, "t5", { properties: blob(1_900) });
    await createGroup(server, "t6", { properties: blob(1_900) });
  });

  it("the command takes them as flags; the byte limits may pass a GiB", () => {
    expect(parseCli(["--max-groups", "5", "--max-group-bytes", "1000", "--max-total-bytes", "2000000000"])).toMatchObject({
      kind: "run",
      config: { maxGroups: 5, maxGroupBytes: 1000, maxTotalBytes: 2_000_000_000 },
    });
    for (const flag of ["--max-groups", "--max-group-bytes", "--max-total-bytes"]) {
      expect(parseCli([flag, "0"])).toMatchObject({ kind: "error", message: new RegExp(`${flag} must be a whole number of 1 or more`) });
      expect(parseCli([flag, "-5"])).toMatchObject({ kind: "error" });
    }
  });
});

/** Resident memory of a process, now and at its peak, in bytes (Linux /proc). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

describe("the emulator's memory", () => {
  it(
    "stays bounded: 150 creates of ~1 MB of properties each against --max-total-bytes 16 MB are refused once it is reached",
    async () => {
      const MiB = 1024 * 1024;
      // An old space of 128 MiB: a store that kept all 150 MB would crash the process (out of memory) before the end.
      const cli = runCli(["--api-key", `${KEYS.customer}=Customer`, "--max-total-bytes", String(16 * 1_000_000)], { ...process.env, NODE_OPTIONS: "--max-old-space-size=128" });
      try {
        const url = await cli.listening;
        const before = memoryOf(cli.child.pid!);
        const statuses: number[] = [];
        const blob = "m".repeat(1_000_000);
        for (let i = 0; i < 150; i++) {
          const res = await request(`${url}/api/user`, {
            method: "GET",
            headers: { authorization: `Token ${KEYS.customer}`, "content-type": "application/json" },
            body: JSON.stringify({ name: `Group ${i}`, user_group_id: `g${i}`, properties: { blob } }),
          });
          const body = (await res.body.json()) as { success: number; error?: { code: string } };
          statuses.push(res.statusCode);
          if (res.statusCode !== 200) expect(body).toMatchObject({ success: 0, error: { code: "storage_full" } });
        }
        // 15 groups of ~1,000,040 bytes fit in 16,000,000; every create after that is refused.
        expect(statuses.slice(0, 15)).toEqual(Array(15).fill(200));
        expect(statuses.slice(15)).toEqual(Array(135).fill(507));
        const after = memoryOf(cli.child.pid!);
        console.log(`fake server RSS: ${Math.round(before.rss / MiB)} MiB before, ${Math.round(after.rss / MiB)} MiB after, peak ${Math.round(after.peak / MiB)} MiB`);
        // Kept: 15 MB (each a one-byte string). The 135 refused bodies are garbage; unbounded, the store held 150 MB more.
        expect(after.peak, `RSS ${before.rss / MiB} MiB before, ${after.rss / MiB} MiB after, peak ${after.peak / MiB} MiB`).toBeLessThan(before.rss + 120 * MiB);
        const groups = await request(`${url}/__admin/groups`);
        expect(((await groups.body.json()) as { groups: unknown[] }).groups).toHaveLength(15);
      } finally {
        cli.child.kill("SIGTERM");
        await cli.exited;
      }
    },
    120_000,
  );
});
