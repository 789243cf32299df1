// The data file: survives a restart, is written atomically with group commit,
// coalesces bursts, and a kill -9 between writes leaves a whole, parseable file.
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Persister, loadSnapshot } from "../../fake-server/persistence.js";
import type { Snapshot } from "../../fake-server/store.js";
import { runCli } from "./cli-process.js";
import { KEYS, call, createGroup, expectOk, start } from "./helpers.js";
import { waitFor } from "../support/wait-for.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "fake-server-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("persistence", () => {
  it("state survives close and start with the same data file", async () => {
    const dataFile = join(dir, "state.json");
    const first = await start({ dataFile });
    const a = await createGroup(first, "a", { mapping: { s: "d" }, properties: { p: [1, { q: null }] } });
    const b = await createGroup(first, "b", {}, KEYS.testing);
    const c = await createGroup(first, "c");
    const rotated = expectOk(await call(first, "POST", { current_token: a.token }), "POST").user_group.token;
    expectOk(await call(first, "PUT", { user_group_id: "b", name: "Bee" }, { key: KEYS.testing }), "PUT");
    expectOk(await call(first, "DELETE", { current_token: c.token }), "DELETE");
    const before = first.groups();
    await first.close();

    const second = await start({ dataFile });
    try {
      expect(second.groups()).toEqual(before);
      const again = expectOk(await call(second, "GET", { name: "x", user_group_id: "a" }), "GET");
      expect(again).toMatchObject({ new_user_group: false, user_group: { token: rotated, properties: { p: [1, { q: null }] } } });
      expect(expectOk(await call(second, "POST", { current_token: rotated }), "POST").user_group.token).not.toBe(rotated);
      // team ids keep counting after a restart: the deleted group's id is not handed out again.
      const d = await createGroup(second, "d");
      expect(d.team_id).toBeGreaterThan(Math.max(a.team_id, b.team_id, c.team_id));
    } finally {
      await second.close();
    }
  });

  it("an answered mutation is already on disk (group commit)", async () => {
    const dataFile = join(dir, "state.json");
    const server = await start({ dataFile });
    try {
      const { token } = await createGroup(server, "a");
      const onDisk = await loadSnapshot(dataFile);
      expect(onDisk?.groups.map((g) => [g.user_group_id, g.token])).toEqual([["a", token]]);
      await server.reset();
      expect((await loadSnapshot(dataFile))?.groups).toEqual([]);
    } finally {
      await server.close();
    }
    // No temporary file is left behind.
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("a burst of mutations is coalesced into a few writes", async () => {
    const file = join(dir, "burst.json");
    let snapshots = 0;
    const state: Snapshot = { version: 1, next_team_id: 1, groups: [] };
    const persister = new Persister(file, () => {
      snapshots += 1;
      return state;
    });
    const commits: Promise<void>[] = [];
    for (let i = 0; i < 1000; i++) {
      state.next_team_id = i + 2;
      persister.markDirty();
      commits.push(persister.commit());
    }
    await Promise.all(commits);
    expect(snapshots).toBeLessThanOrEqual(2);
    expect((await loadSnapshot(file))?.next_team_id).toBe(1001);

    // Over HTTP: 200 concurrent creates, all on disk once answered.
    const dataFile = join(dir, "http.json");
    const server = await start({ dataFile });
    try {
      await Promise.all(Array.from({ length: 200 }, (_, i) => createGroup(server, `g${i}`)));
      expect((await loadSnapshot(dataFile))?.groups).toHaveLength(200);
    } finally {
      await server.close();
    }
  });

  it("a corrupted data file stops the start with a clear error and is left alone", async () => {
    const dataFile = join(dir, "state.json");
    await writeFile(dataFile, '{"version":1,"groups":[');
    await expect(start({ dataFile })).rejects.toThrow(/not valid JSON/);
    await writeFile(dataFile, '{"something":"else"}');
    await expect(start({ dataFile })).rejects.toThrow(/does not hold fake-server state/);
    expect(await readFile(dataFile, "utf8")).toBe('{"something":"else"}');
  });

  it("kill -9 of the CLI in the middle of a write burst leaves a parseable file with every answered change", async () => {
    const dataFile = join(dir, "state.json");
    const run = runCli(["--api-key", `${KEYS.customer}=Customer`, "--data-file", dataFile]);
    const url = await run.listening;
    const acknowledged: string[] = [];
    let stop = false;
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        try {
          const res = await request(`${url}/api/user`, {
            method: "GET",
            headers: { authorization: `Token ${KEYS.customer}`, "content-type": "application/json" },
            body: JSON.stringify({ name: id, user_group_id: id, properties: { pad: "x".repeat(2000) } }),
          });
          await res.body.text();
          if (res.statusCode === 200) acknowledged.push(id);
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    await waitFor(() => acknowledged.length >= 150, { timeoutMs: 60_000, what: "150 acknowledged creates" });
    run.child.kill("SIGKILL");
    expect(await run.exited).toBe("SIGKILL");
    stop = true;
    await Promise.all(workers);

    const snapshot = await loadSnapshot(dataFile);
    const stored = new Set(snapshot?.groups.map((g) => g.user_group_id));
    for (const id of acknowledged) expect(stored.has(id)).toBe(true);

    // And the server starts again from it.
    const restarted = await start({ dataFile });
    try {
      expect(restarted.groups().length).toBe(stored.size);
    } finally {
      await restarted.close();
    }
  });
});
