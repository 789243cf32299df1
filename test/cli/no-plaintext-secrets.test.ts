// Issue #39 item 2: no secret ever reaches a file outside the private run
// directory, and none in plaintext anywhere. The Automation API's exportStack()
// exported with --show-secrets, and its importStack() wrote the document to
// os.tmpdir()/automation-NNNNNN (mode 0644): `recover --rewrite-providers` left
// every token readable by anyone, and a recover killed during its import left
// the file behind. Here every command that touches the state runs with the
// service's real tokens as canaries, while the temporary directories (the
// commands' os.tmpdir(), where their private run directories are), the work
// directory with its file backend, and PULUMI_HOME are scanned for them every few
// milliseconds during the run and once after; a recover killed (SIGKILL) right at
// its import leaves no file holding one either.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { KNOWN_PROVIDER_TEXTS } from "../../provider/automation/engine/provider-code";
import { USER_GROUP_TYPE } from "../../provider/resource/user-group";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, USER_GROUPS_CLI } from "../support/user-groups-cli";

const KEY = "no-plaintext-key-00000001";
const WORKER = path.join(__dirname, "../../testkit/fleet-worker.cjs");
let server: FakeServer;
let env: PulumiTestEnv;
/** The commands' os.tmpdir() (TMPDIR): their run directories and anything the Automation API writes there. */
let tmp: string;

function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, TMPDIR: tmp, ...extra };
}

/** Every regular file under the roots (symlinks not followed), and the Automation API's old leak names in the machine's temporary directory. */
function filesUnder(roots: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // removed meanwhile
    }
    for (const entry of entries) {
      const at = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(at);
      else if (entry.isFile()) found.push(at);
    }
  };
  roots.forEach(walk);
  for (const name of readdirSync(os.tmpdir())) if (name.startsWith("automation-")) found.push(path.join(os.tmpdir(), name));
  return found;
}

interface Scan {
  /** Files that held a canary in plaintext, and when. */
  readonly hits: Set<string>;
  /** State documents seen being imported: path, file mode, its directory's mode. */
  readonly imports: Map<string, { mode: number; dirMode: number }>;
  /** How many times the directories were scanned. */
  passes: number;
}

function scanOnce(canaries: readonly string[], scan: Scan): void {
  scan.passes += 1;
  // The test's whole directory: the commands' TMPDIR, the work directory and its file backend, the fleet's backend, PULUMI_HOME.
  for (const file of filesUnder([path.dirname(env.workDir)])) {
    let text: string;
    try {
      if (/state-import-[0-9a-f]+\.json$/.test(file) && !scan.imports.has(file)) {
        scan.imports.set(file, { mode: lstatSync(file).mode & 0o777, dirMode: lstatSync(path.dirname(file)).mode & 0o777 });
      }
      text = readFileSync(file, "latin1");
    } catch {
      continue; // removed between the listing and the read
    }
    for (const canary of canaries) if (text.includes(canary)) scan.hits.add(file);
  }
}

/** Scans every 15 ms while `run` lasts, then once more. */
async function scanning<T>(canaries: readonly string[], run: () => Promise<T>): Promise<{ result: T; scan: Scan }> {
  const scan: Scan = { hits: new Set(), imports: new Map(), passes: 0 };
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      scanOnce(canaries, scan);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  })();
  try {
    const result = await run();
    return { result, scan };
  } finally {
    stop = true;
    await loop;
    scanOnce(canaries, scan);
  }
}

function spawnCli(args: readonly string[], detached = false): { child: ChildProcess; done: Promise<CliRun> } {
  const child = spawn(process.execPath, [USER_GROUPS_CLI, ...args], { cwd: env.workDir, env: childEnv(), stdio: ["ignore", "pipe", "pipe"], detached });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

function cli(...args: string[]): Promise<CliRun> {
  return spawnCli(args).done;
}

/** Every token the service holds now: what must never be in a file. */
function tokens(): string[] {
  return server.groups().map((group) => group.token);
}

/** The default backend's stack file, as a repository holds it. */
function stackFile(stack: string): string {
  return path.join(env.workDir, ".user-groups", "state", ".pulumi", "stacks", "user-groups", `${stack}.json`);
}

/** An older version's provider text, which `recover --rewrite-providers` writes the current one over. */
function plantProviderText(stack: string): void {
  const stored = JSON.parse(readFileSync(stackFile(stack), "utf8")) as { checkpoint: { latest: { resources: Array<{ type: string; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> }> } } };
  for (const resource of stored.checkpoint.latest.resources) {
    if (resource.type !== USER_GROUP_TYPE) continue;
    resource.inputs!.__provider = KNOWN_PROVIDER_TEXTS[1];
    resource.outputs!.__provider = KNOWN_PROVIDER_TEXTS[1];
  }
  writeFileSync(stackFile(stack), JSON.stringify(stored, null, 4));
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("no-plaintext");
  tmp = path.join(path.dirname(env.workDir), "tmp");
  mkdirSync(tmp);
  chmodSync(tmp, 0o700);
  writeFileSync(path.join(env.workDir, "groups.yaml"), "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
  const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
  expect(tokens()).toHaveLength(2);
}, 180_000);
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("no token in plaintext in any file, during or after each command", () => {
  it("the scan finds a canary where one is (its own check)", () => {
    const planted = path.join(tmp, "automation-123456");
    writeFileSync(planted, JSON.stringify({ plaintext: tokens()[0] }));
    const scan: Scan = { hits: new Set(), imports: new Map(), passes: 0 };
    scanOnce(tokens(), scan);
    expect([...scan.hits]).toEqual([planted]);
    writeFileSync(planted, "");
  });

  it.each([
    ["preview", ["preview", "--file", "groups.yaml", "--stack", "prod"]],
    ["preview (engine)", ["preview", "--file", "groups.yaml", "--stack", "prod", "--refresh"]],
    ["up", ["up", "--file", "groups.yaml", "--stack", "prod", "--yes"]],
    ["up --refresh", ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--refresh"]],
    ["refresh", ["refresh", "--stack", "prod", "--yes"]],
    ["drift", ["drift", "--stack", "prod"]],
    ["recover", ["recover", "--file", "groups.yaml", "--stack", "prod", "--yes"]],
  ])("%s", async (_name, args) => {
    const canaries = tokens();
    const { result, scan } = await scanning(canaries, () => cli(...args));
    expect(result.code, result.stderr).toBe(0);
    expect(scan.passes).toBeGreaterThan(3);
    expect([...scan.hits]).toEqual([]);
    expect(tokens()).toEqual(canaries);
  }, 300_000);

  it("recover --rewrite-providers: the state document goes to a 0600 file in the 0700 run directory, holds ciphertext only, and is removed", async () => {
    plantProviderText("prod");
    const canaries = tokens();
    const { result, scan } = await scanning(canaries, () => cli("recover", "--file", "groups.yaml", "--stack", "prod", "--yes", "--rewrite-providers"));
    expect(result.code, result.stderr).toBe(0);
    expect([...scan.hits]).toEqual([]);
    // The scan saw the document while it existed (so it would have seen a token in it).
    expect(scan.imports.size).toBe(1);
    const [file, seen] = [...scan.imports][0]!;
    expect(path.dirname(path.dirname(file))).toBe(tmp);
    expect(path.basename(path.dirname(file))).toMatch(/^user-groups-run-/);
    expect(seen).toEqual({ mode: 0o600, dirMode: 0o700 });
    expect(filesUnder([tmp]).filter((f) => /state-import-/.test(f))).toEqual([]);
    expect(readFileSync(stackFile("prod"), "utf8")).not.toContain("is not installed where this Pulumi program runs");
  }, 300_000);

  it("a recover killed (SIGKILL) at its import leaves no file holding a token; the next recover finishes", async () => {
    plantProviderText("prod");
    const canaries = tokens();
    const { child, done } = spawnCli(["recover", "--file", "groups.yaml", "--stack", "prod", "--yes", "--rewrite-providers"], true);
    let killedAt: string | undefined;
    const { scan } = await scanning(canaries, async () => {
      for (let i = 0; i < 200 * 120 && killedAt === undefined; i++) {
        killedAt = filesUnder([tmp]).find((f) => /state-import-[0-9a-f]+\.json$/.test(f));
        if (killedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      process.kill(-child.pid!, "SIGKILL");
      return done;
    });
    expect(killedAt, "the recover never reached its import").toBeDefined();
    expect([...scan.hits]).toEqual([]);
    // What a kill leaves is in the run directory, closed to others, and holds the state's ciphertext only.
    for (const file of filesUnder([tmp]).filter((f) => /state-import-/.test(f))) {
      expect(lstatSync(file).mode & 0o777).toBe(0o600);
      expect(lstatSync(path.dirname(file)).mode & 0o777).toBe(0o700);
      const text = readFileSync(file, "utf8");
      for (const canary of canaries) expect(text).not.toContain(canary);
    }
    const again = await scanning(canaries, () => cli("recover", "--file", "groups.yaml", "--stack", "prod", "--yes", "--rewrite-providers"));
    expect(again.result.code, again.result.stderr).toBe(0);
    expect([...again.scan.hits]).toEqual([]);
  }, 300_000);

  it("a fleet's ensure of a group it holds answers its token from the state, decrypted in memory only", async () => {
    const job = { stack: "fleet", backendUrl: `file://${env.backendDir}`, workDir: path.join(env.workDir, "fleet"), ids: ["fleet-a"], prefix: "Customer" };
    const ensure = () =>
      new Promise<{ report: Array<{ id: string; change?: string; token?: string; error?: string }> }>((resolve, reject) => {
        const worker = spawn(process.execPath, [WORKER], { env: childEnv({ FLEET_WORKER_JOB: JSON.stringify(job) }), stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        worker.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
        worker.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        worker.on("close", (code) => (code === 0 ? resolve(JSON.parse(stdout.trim().split("\n").at(-1)!)) : reject(new Error(`fleet worker exited ${code}: ${stderr}`))));
      });
    const first = await scanning(tokens(), ensure);
    expect(first.result.report[0]).toMatchObject({ id: "fleet-a", change: "create" });
    expect([...first.scan.hits]).toEqual([]);
    const created = server.groups().find((group) => group.user_group_id === "fleet-a")!;
    const second = await scanning(tokens(), ensure);
    expect(second.result.report[0]).toEqual({ id: "fleet-a", change: "same", token: created.token });
    expect([...second.scan.hits]).toEqual([]);
  }, 300_000);

  it("destroy", async () => {
    const canaries = tokens();
    const { result, scan } = await scanning(canaries, () => cli("destroy", "--stack", "prod", "--yes"));
    expect(result.code, result.stderr).toBe(0);
    expect([...scan.hits]).toEqual([]);
  }, 300_000);
});
