// The user-groups-fake-server command: listening line, keys, flags, graceful stop.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, type CliRun } from "./cli-process.js";
import { waitFor } from "../support/wait-for.js";

const running: CliRun[] = [];
function cli(args: readonly string[]): CliRun {
  const run = runCli(args);
  running.push(run);
  return run;
}
afterEach(async () => {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill("SIGKILL");
      await run.exited;
    }
  }
});

async function get(url: string, key: string, id: string): Promise<{ status: number; json: { success: number } }> {
  const res = await request(`${url}/api/user`, {
    method: "GET",
    headers: { authorization: `Token ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "N", user_group_id: id }),
  });
  return { status: res.statusCode, json: (await res.body.json()) as { success: number } };
}

describe("user-groups-fake-server", () => {
  it("prints exactly one listening line, serves the API, and exits 0 on SIGTERM", async () => {
    const run = cli(["--api-key", "cli-key-customer=Customer", "--api-key", "cli-key-testing=Testing:ro"]);
    const url = await run.listening;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await get(url, "cli-key-customer", "a")).status).toBe(200);
    // :ro makes the Testing key read-only: a creating GET is refused.
    expect((await get(url, "cli-key-testing", "a")).status).toBe(403);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toBe(`listening on ${url}\n`);
    expect(run.stderr()).not.toContain("cli-key-customer");
  });

  it("--pid-file: the process id is there when the listening line is, `kill \"$(cat PATH)\"` stops it, and the file goes", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "fake-server-pid-"));
    try {
      const pidFile = path.join(dir, "fake-server.pid");
      const run = cli(["--api-key", "cli-key-customer=Customer", "--pid-file", pidFile]);
      const url = await run.listening;
      expect(readFileSync(pidFile, "utf8")).toBe(`${run.child.pid}\n`);
      expect((await get(url, "cli-key-customer", "a")).status).toBe(200);
      process.kill(Number(readFileSync(pidFile, "utf8")), "SIGTERM");
      expect(await run.exited).toBe(0);
      expect(existsSync(pidFile)).toBe(false);
      expect(run.stdout()).toBe(`listening on ${url}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("--pid-file that cannot be written: said, exit 2, nothing left listening", async () => {
    const run = cli(["--api-key", "cli-key-customer=Customer", "--pid-file", "/nonexistent-dir/x.pid"]);
    run.listening.catch(() => undefined);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain("cannot write --pid-file /nonexistent-dir/x.pid");
    expect(run.stdout()).toBe("");
  });

  it("SIGTERM lets an in-flight request finish before exiting", async () => {
    const run = cli(["--api-key", "cli-key-customer=Customer"]);
    const url = await run.listening;
    await request(`${url}/__admin/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rules: [{ method: "GET", action: "delay", delayMs: 400, times: 1 }] }),
    }).then((r) => r.body.text());
    const inFlight = get(url, "cli-key-customer", "slow");
    // The rule is spent once the GET reached it: the request is then in flight (being delayed).
    await waitFor(
      async () => {
        const listed = (await request(`${url}/__admin/faults`).then((r) => r.body.json())) as { rules: Array<{ remaining?: number }> };
        return listed.rules[0]?.remaining === 0;
      },
      { what: "the GET to be delayed by the server" },
    );
    run.child.kill("SIGTERM");
    const reply = await inFlight;
    expect(reply.status).toBe(200);
    expect(reply.json.success).toBe(1);
    expect(await run.exited).toBe(0);
  });

  it("without --api-key it generates one Customer key and prints it once to stderr", async () => {
    const run = cli([]);
    const url = await run.listening;
    const match = /generated a Customer read-write API key: (\S+)/.exec(run.stderr());
    expect(match).not.toBeNull();
    const key = match?.[1] ?? "";
    expect(run.stderr().split(key).length - 1).toBe(1);
    expect((await get(url, key, "a")).status).toBe(200);
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
  });

  it("--rate-limit and --log work, and the log never shows the key", async () => {
    const run = cli(["--api-key", "cli-key-customer=Customer", "--rate-limit", "2/60", "--log"]);
    const url = await run.listening;
    expect((await get(url, "cli-key-customer", "a")).status).toBe(200);
    expect((await get(url, "cli-key-customer", "a")).status).toBe(200);
    expect((await get(url, "cli-key-customer", "a")).status).toBe(429);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toMatch(/GET \/api\/user 429 [\d.]+ms Customer/);
    expect(run.stderr()).not.toContain("cli-key-customer");
  });

  it.each([
    [["--bogus"], /bogus/],
    [["--port", "http"], /--port/],
    [["--port", "70000"], /--port/],
    [["--api-key", "novalue"], /KEY=ENV/],
    [["--api-key", "k=Production"], /Customer, Testing/],
    [["--rate-limit", "5"], /N\/SECONDS/],
    [["--rate-limit", "0/10"], /N\/SECONDS/],
    [["--host", "0.0.0.0"], /admin token/],
    [["stray-positional"], /positional|Unexpected/i],
  ])("bad flags %j: a clear message and exit code 2", async (args, message) => {
    const run = cli(args);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toMatch(message);
    expect(run.stdout()).toBe("");
  });

  it("--help prints the usage and exits 0", async () => {
    const run = cli(["--help"]);
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toContain("--api-key KEY=ENV[:ro]");
  });
});
