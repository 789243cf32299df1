// One object-store emulator as a child process of the test (issue 42 item 4):
// on 127.0.0.1 and a free port (another tried when it was taken meanwhile),
// waited for until it answers HTTP, its data in a temporary directory of its own
// (0700), its own process group, so that stop() ends it and everything under it.
// Credentials reach it (and Pulumi) only through the environment, never a
// command line: the starters (s3.ts, azurite.ts, gcs.ts) pass them in `env`.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../free-port";

export interface StoreProcess {
  readonly port: number;
  readonly pid: number;
  readonly dataDir: string;
  /** The last of what it printed (for a failure message). */
  output(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly name: string;
  readonly command: string;
  /** Its arguments for a port and a data directory: never a credential. */
  readonly args: (port: number, dataDir: string) => string[];
  /** Added to this process's environment (credentials go here). */
  readonly env?: Record<string, string>;
  /** A path that answers once it is up (any HTTP status counts). */
  readonly readyPath?: string;
  readonly timeoutMs?: number;
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // gone
  }
}

export async function startStoreProcess(options: StartOptions): Promise<StoreProcess> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `ug-${options.name}-`));
  chmodSync(dataDir, 0o700);
  const timeoutMs = options.timeoutMs ?? 60_000;
  let lastLog = "";
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    let log = "";
    const child = spawn(options.command, options.args(port, dataDir), {
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const keep = (chunk: string) => void (log = (log + chunk).slice(-10_000));
    child.stdout!.setEncoding("utf8").on("data", keep);
    child.stderr!.setEncoding("utf8").on("data", keep);
    let exited = false;
    const exit = new Promise<void>((resolve) => child.once("exit", () => ((exited = true), resolve())));
    child.once("error", (error) => keep(`${error.message}\n`));
    const deadline = Date.now() + timeoutMs;
    let up = false;
    while (!exited && Date.now() < deadline) {
      if (await answers(`http://127.0.0.1:${port}${options.readyPath ?? "/"}`)) {
        up = true;
        break;
      }
      await sleep(100);
    }
    if (up) {
      return {
        port,
        pid: child.pid!,
        dataDir,
        output: () => log,
        stop: async () => {
          if (!exited) {
            killGroup(child, "SIGTERM");
            await Promise.race([exit, sleep(5_000)]);
            if (!exited) killGroup(child, "SIGKILL");
            await Promise.race([exit, sleep(5_000)]);
          }
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    }
    killGroup(child, "SIGKILL");
    await Promise.race([exit, sleep(5_000)]);
    lastLog = log;
    // A port taken meanwhile: try another; anything else is reported after the last try.
  }
  rmSync(dataDir, { recursive: true, force: true });
  throw new Error(`${options.name} did not start on 127.0.0.1 (3 tries): ${lastLog.slice(-2_000)}`);
}

/** The last line a scripts/ensure-* printed: the path it made available. */
export function ensured(script: string): string {
  const stdout = execFileSync(script, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const found = stdout.trim().split("\n").at(-1);
  if (!found) throw new Error(`${script} printed no path`);
  return found;
}

export const REPO_ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}build${path.sep}`) ? "../../.." : "../..");

/** What every store offers the tests: the primitive issue 42's adapters will use, and a look at what is stored. */
export interface ObjectStore {
  readonly kind: "s3" | "azblob" | "gs";
  readonly port: number;
  readonly pid: number;
  /** The environment Pulumi (and any client) needs for this store: its credentials and endpoint settings. */
  readonly env: Record<string, string>;
  createBucket(name: string): Promise<void>;
  /** Pulumi's DIY backend URL for a bucket (or container) of this store. */
  backendUrl(bucket: string): string;
  /** Object keys under a prefix. */
  list(bucket: string, prefix?: string): Promise<string[]>;
  /** An object's bytes, or undefined when it is absent. */
  get(bucket: string, key: string): Promise<Buffer | undefined>;
  /** A plain write (no condition): it replaces whatever is there. */
  put(bucket: string, key: string, body: Buffer): Promise<void>;
  /** Create-if-absent: the store's own conditional write (S3 and Azure `If-None-Match: *`, GCS `ifGenerationMatch=0`). */
  putIfAbsent(bucket: string, key: string, body: Buffer): Promise<"created" | "exists">;
  stop(): Promise<void>;
}

/** A fetch that throws a readable error for an unexpected status (its body cut short; never a request header). */
export async function expectStatus(response: Response, ok: readonly number[], what: string): Promise<Response> {
  if (!ok.includes(response.status)) {
    const body = (await response.text()).slice(0, 500);
    throw new Error(`${what}: HTTP ${response.status}: ${body}`);
  }
  return response;
}
