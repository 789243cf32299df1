// Toxiproxy (github.com/Shopify/toxiproxy/v2 v2.5.0, built by scripts/ensure-toxiproxy)
// for the partition faults: a proxy per replica between it and PostgreSQL, on
// 127.0.0.1, driven through its HTTP admin API.
//
// - "reset": a reset_peer toxic (timeout 0) on both directions: every connection
//   that sends or receives a byte is closed with a TCP RST, new ones too;
// - "refuse": the proxy disabled: every connection closed, new ones refused;
// - "blackhole": a timeout toxic (timeout 0) on both directions: connections stay
//   open, every byte is dropped, until the toxic is removed (then the streams
//   have lost data: their next message is garbage to PostgreSQL).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import path from "node:path";
import { freePort } from "../free-port";

export type PartitionMode = "reset" | "refuse" | "blackhole";

export interface Toxiproxy {
  /** Makes a proxy to `upstream` (host:port); answers the port it listens on. */
  proxy(name: string, upstream: string): Promise<number>;
  partition(name: string, mode: PartitionMode): Promise<void>;
  /** One toxic of Toxiproxy's own (e.g. `limit_data` on the downstream: an answer cut after `bytes`), until heal. */
  toxic(name: string, type: string, stream: "upstream" | "downstream", attributes: Record<string, number>): Promise<void>;
  heal(name: string): Promise<void>;
  stop(): Promise<void>;
}

const REPO_ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}build${path.sep}`) ? "../../.." : "../..");

/** The bin directory of Toxiproxy (builds it on first use: scripts/ensure-toxiproxy). */
export function toxiproxyBinDir(): string {
  const stdout = execFileSync(path.join(REPO_ROOT, "scripts", "ensure-toxiproxy"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const dir = stdout.trim().split("\n").at(-1);
  if (!dir) throw new Error("scripts/ensure-toxiproxy printed no bin directory");
  return dir;
}

export async function startToxiproxy(): Promise<Toxiproxy> {
  const bin = path.join(toxiproxyBinDir(), "toxiproxy-server");
  let child: ChildProcess | undefined;
  let api = "";
  let log = "";
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    child = spawn(bin, ["-host", "127.0.0.1", "-port", String(port)], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => void (log = (log + chunk).slice(-10_000)));
    const up = await waitForApi(api, child);
    if (up) break;
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone
    }
    if (attempt >= 3) throw new Error(`toxiproxy-server did not start: ${log}`);
  }
  const request = async (method: string, route: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${api}${route}`, { method, ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}) });
    const text = await response.text();
    if (!response.ok) throw new Error(`toxiproxy ${method} ${route}: ${response.status} ${text}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  };
  const toxics = async (name: string) => (await request("GET", `/proxies/${name}/toxics`)) as Array<{ name: string }>;
  return {
    async proxy(name, upstream) {
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        try {
          await request("POST", "/proxies", { name, listen: `127.0.0.1:${port}`, upstream, enabled: true });
          return port;
        } catch (error) {
          if (attempt >= 3) throw error;
        }
      }
    },
    async partition(name, mode) {
      if (mode === "refuse") {
        await request("POST", `/proxies/${name}`, { enabled: false });
        return;
      }
      for (const stream of ["upstream", "downstream"]) {
        await request("POST", `/proxies/${name}/toxics`, {
          name: `${mode}-${stream}`,
          type: mode === "reset" ? "reset_peer" : "timeout",
          stream,
          toxicity: 1,
          attributes: { timeout: 0 },
        });
      }
    },
    async toxic(name, type, stream, attributes) {
      await request("POST", `/proxies/${name}/toxics`, { name: `${type}-${stream}`, type, stream, toxicity: 1, attributes });
    },
    async heal(name) {
      for (const toxic of await toxics(name)) await request("DELETE", `/proxies/${name}/toxics/${toxic.name}`);
      await request("POST", `/proxies/${name}`, { enabled: true });
    },
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child!.once("exit", resolve));
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // gone
        }
        await exited;
      }
    },
  };
}

async function waitForApi(api: string, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) return false;
    try {
      const response = await fetch(`${api}/version`);
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
