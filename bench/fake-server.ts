// Throughput of GET on an existing group: the fake server against a bare node:http
// server that parses the same JSON and answers the same shape.
//   npm run bench:fake-server            (BENCH_SECONDS=5 by default)
// Each server runs in its own worker thread so the load generator (main thread,
// undici Pool with 32 keep-alive connections) does not share its event loop.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { Pool } from "undici";
import { startFakeServer } from "../fake-server/index.js";

type Role = "fake" | "bare";
const CONNECTIONS = 32;
const SECONDS = Number(process.env["BENCH_SECONDS"] ?? "5");
const WARMUP_SECONDS = 1;
const KEY = "bench-key-0000000000000000";
const BODY = JSON.stringify({ name: "Bench", user_group_id: "bench" });
const HEADERS = { authorization: `Token ${KEY}`, "content-type": "application/json" };

async function serve(role: Role): Promise<string> {
  if (role === "fake") {
    const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
    return server.url;
  }
  const group = {
    team_id: 1,
    token: "0".repeat(64),
    name: "Bench",
    provided_id: "bench",
    properties: null,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const ok = body !== null && typeof body === "object" && !Array.isArray(body);
      const text = JSON.stringify(ok ? { success: 1, new_user_group: false, user_group: group } : { success: 0 });
      res.writeHead(ok ? 200 : 400, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": String(Buffer.byteLength(text)),
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no address");
  return `http://127.0.0.1:${address.port}`;
}

interface Result {
  /** Server event-loop busy time per request, in microseconds: the cost of the hot path itself. */
  serverUsPerRequest?: number;
  requests: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
}

async function load(url: string, seconds: number): Promise<Result> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: "/api/user", method: "GET", headers: HEADERS, body: BODY });
        await res.body.text();
        if (res.statusCode !== 200) errors += 1;
      } catch {
        errors += 1;
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const pick = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, seconds: elapsed, p50: pick(0.5), p99: pick(0.99) };
}

async function measure(role: Role): Promise<Result> {
  const worker = new Worker(__filename, { workerData: { role } });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      worker.once("message", (m: string) => resolve(m));
      worker.once("error", reject);
    });
    // Create the group once; every measured GET then finds it existing.
    const pool = new Pool(url, { connections: 1 });
    const res = await pool.request({ path: "/api/user", method: "GET", headers: HEADERS, body: BODY });
    await res.body.text();
    await pool.close();
    await load(url, WARMUP_SECONDS);
    const before = worker.performance.eventLoopUtilization();
    const result = await load(url, SECONDS);
    const elu = worker.performance.eventLoopUtilization(before);
    // The client often saturates first on a small machine; busy time per request
    // compares the two servers even then.
    return { ...result, serverUsPerRequest: (elu.active * 1000) / result.requests };
  } finally {
    await worker.terminate();
  }
}

function row(name: string, r: Result): string {
  const rps = r.requests / r.seconds;
  return `${name.padEnd(22)} ${rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   server ${(r.serverUsPerRequest ?? NaN).toFixed(1).padStart(6)} µs/req   errors ${r.errors}`;
}

async function main(): Promise<void> {
  process.stdout.write(`GET /api/user on an existing group, ${CONNECTIONS} keep-alive connections, ${SECONDS}s each\n`);
  const bare = await measure("bare");
  process.stdout.write(`${row("bare node:http", bare)}\n`);
  const fake = await measure("fake");
  process.stdout.write(`${row("fake server", fake)}\n`);
  const ratio = fake.requests / fake.seconds / (bare.requests / bare.seconds);
  process.stdout.write(`ratio fake/bare: ${ratio.toFixed(2)}x (goal >= 0.90x)\n`);
  const costRatio = (bare.serverUsPerRequest ?? NaN) / (fake.serverUsPerRequest ?? NaN);
  process.stdout.write(`server cost ratio bare/fake: ${costRatio.toFixed(2)}x (1.00x = same work per request)\n`);
}

if (isMainThread) {
  main().catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
} else {
  const { role } = workerData as { role: Role };
  serve(role).then(
    (url) => parentPort?.postMessage(url),
    (error: unknown) => {
      throw error;
    },
  );
}
