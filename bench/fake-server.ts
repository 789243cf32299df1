// Throughput of GET on an existing group: the fake server against a bare node:http
// server that parses the same JSON and answers the same shape.
//   npm run bench:fake-server            (BENCH_SECONDS=5, BENCH_ROUNDS=5 by default)
// `compareServers` is also run by bench/run.ts (npm run bench).
// Each server runs in its own worker thread so the load generator (main thread,
// undici Pool with 32 keep-alive connections) does not share its event loop.
import { createServer } from "node:http";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { Pool } from "undici";
import { startFakeServer } from "../fake-server/index.js";
import { closedLoop } from "./load.js";

export type Role = "fake" | "bare";
const CONNECTIONS = 32;
const WARMUP_SECONDS = 1;
export const KEY = "bench-key-0000000000000000";
const BODY = JSON.stringify({ name: "Bench", user_group_id: "bench" });
const HEADERS = { authorization: `Token ${KEY}`, "content-type": "application/json" };

async function serve(role: Role, journalSize?: number): Promise<string> {
  if (role === "fake") {
    const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], ...(journalSize !== undefined ? { journalSize } : {}) });
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

export interface Result {
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
  try {
    return await closedLoop(
      async () => {
        // reset: false: undici would otherwise close the connection after each GET with a body.
        const res = await pool.request({ path: "/api/user", method: "GET", headers: HEADERS, body: BODY, reset: false });
        await res.body.text();
        return res.statusCode === 200;
      },
      CONNECTIONS,
      seconds,
    );
  } finally {
    await pool.close();
  }
}

export interface ServerThread {
  readonly url: string;
  readonly worker: Worker;
  close(): Promise<void>;
}

/**
 * One server (the fake one with key KEY, or the bare one) in a worker thread of
 * its own, so that whatever drives it does not share its event loop. The fake
 * server keeps the last `journalSize` requests (GET /__admin/requests).
 */
export async function startServerThread(role: Role, journalSize?: number): Promise<ServerThread> {
  const worker = new Worker(__filename, { workerData: { benchRole: role, journalSize } });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once("message", (m: string) => resolve(m));
    worker.once("error", reject);
  });
  return { url, worker, close: async () => void (await worker.terminate()) };
}

/** One round: a fresh server thread, the measured group created, a warm-up, then `seconds` of load. */
async function measure(role: Role, seconds: number): Promise<Result> {
  const { url, worker, close } = await startServerThread(role);
  try {
    // Create the group once; every measured GET then finds it existing.
    const pool = new Pool(url, { connections: 1 });
    const res = await pool.request({ path: "/api/user", method: "GET", headers: HEADERS, body: BODY });
    await res.body.text();
    await pool.close();
    await load(url, WARMUP_SECONDS);
    const before = worker.performance.eventLoopUtilization();
    const result = await load(url, seconds);
    const elu = worker.performance.eventLoopUtilization(before);
    // The client often saturates first on a small machine; busy time per request
    // compares the two servers even then.
    return { ...result, serverUsPerRequest: (elu.active * 1000) / result.requests };
  } finally {
    await close();
  }
}

/** Requests per second of a measurement. */
export function rps(r: Result): number {
  return r.requests / r.seconds;
}

function row(name: string, r: Result): string {
  return `${name.padEnd(22)} ${rps(r).toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   server ${(r.serverUsPerRequest ?? NaN).toFixed(1).padStart(6)} µs/req   errors ${r.errors}`;
}

/** Both servers measured one after the other. */
export interface ServerRound {
  readonly bare: Result;
  readonly fake: Result;
  /** Requests per second, fake / bare, within this round. */
  readonly ratio: number;
}

export interface ServerComparison {
  readonly connections: number;
  readonly seconds: number;
  readonly rounds: number;
  /** The median round (by its ratio): what the table shows. */
  readonly bare: Result;
  readonly fake: Result;
  /** Requests per second, fake / bare, of the median round (goal >= 0.90). */
  readonly throughputRatio: number;
  /** Every round's ratio, in the order measured. */
  readonly roundRatios: readonly number[];
  /** Server busy time per request, bare / fake, of the median round (1.00 = same work per request). */
  readonly costRatio: number;
}

/** The round whose ratio is the median (the upper one of an even count). */
export function medianRound(rounds: readonly ServerRound[]): ServerRound {
  const sorted = [...rounds].sort((a, b) => a.ratio - b.ratio);
  const middle = sorted[Math.floor(sorted.length / 2)];
  if (middle === undefined) throw new Error("rounds must be at least 1");
  return middle;
}

/**
 * Both servers, `rounds` rounds of `seconds` of load each. Within a round the
 * two run back to back, in alternating order (bare first, then fake first, ...),
 * and are compared with each other: this machine's speed drifts by a third over
 * minutes, so a ratio within one round is steadier than the best of each over
 * several. The median round is reported, with every round's ratio.
 */
export async function compareServers(seconds: number, rounds = 1): Promise<ServerComparison> {
  const measured: ServerRound[] = [];
  for (let round = 0; round < rounds; round++) {
    let bare: Result;
    let fake: Result;
    if (round % 2 === 0) {
      bare = await measure("bare", seconds);
      fake = await measure("fake", seconds);
    } else {
      fake = await measure("fake", seconds);
      bare = await measure("bare", seconds);
    }
    measured.push({ bare, fake, ratio: rps(fake) / rps(bare) });
  }
  const median = medianRound(measured);
  return {
    connections: CONNECTIONS,
    seconds,
    rounds,
    bare: median.bare,
    fake: median.fake,
    throughputRatio: median.ratio,
    roundRatios: measured.map((r) => r.ratio),
    costRatio: (median.bare.serverUsPerRequest ?? NaN) / (median.fake.serverUsPerRequest ?? NaN),
  };
}

async function main(): Promise<void> {
  const seconds = Number(process.env["BENCH_SECONDS"] ?? "5");
  const rounds = Number(process.env["BENCH_ROUNDS"] ?? "5");
  process.stdout.write(`GET /api/user on an existing group, ${CONNECTIONS} keep-alive connections, ${rounds} rounds of ${seconds}s of each\n`);
  const result = await compareServers(seconds, rounds);
  process.stdout.write(`${row("bare node:http", result.bare)}\n`);
  process.stdout.write(`${row("fake server", result.fake)}\n`);
  process.stdout.write(`ratio fake/bare: ${result.throughputRatio.toFixed(2)}x of the median round (goal >= 0.90x); rounds: ${result.roundRatios.map((r) => r.toFixed(2)).join(", ")}\n`);
  process.stdout.write(`server cost ratio bare/fake: ${result.costRatio.toFixed(2)}x (1.00x = same work per request)\n`);
}

const serverData = isMainThread ? undefined : (workerData as { benchRole?: Role; journalSize?: number } | undefined);
if (serverData?.benchRole !== undefined) {
  // A worker started by startServerThread: serve, and tell the main thread where.
  serve(serverData.benchRole, serverData.journalSize).then(
    (url) => parentPort?.postMessage(url),
    (error: unknown) => {
      throw error;
    },
  );
} else if (isMainThread && require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
}
