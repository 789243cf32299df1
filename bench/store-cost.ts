// What one sign-up costs on each backend with a run lease (issue 42 item 6):
// PostgreSQL, S3 (moto), Azure Blob (Azurite), GCS (fake-gcs-server), each
// started here on 127.0.0.1. A fleet with one replica on a stack that exists
// (its first group made before measuring) ensures one new group at a time; per
// sign-up: its latency (the ensure's wall time) and what it asked of the store.
// On an object store every request of every process of the run (ours, the
// engine's stack selection, the provider's fence and rate budget) goes through a
// counting proxy in front of the store, so they are counted by method, with
// their round-trip time; on PostgreSQL the transactions the database committed
// or rolled back meanwhile (pg_stat_database; a statement outside a transaction
// is one), read after the stats settle.
//   npm run bench -- --only stores        BENCH_STORES_SIGNUPS=5 (default 3)
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { Client } from "pg";
import { startFakeServer } from "../fake-server/index.js";
import { UserGroupFleet } from "../provider/automation/index.js";
import { startPostgres } from "../testkit/postgres.js";
import { type ObjectStore, startAzurite, startGcs, startS3 } from "../testkit/object-stores/index.js";
import { median } from "./stats.js";

const KEY = "bench-stores-key-0000000001";

export interface StoreCostRow {
  readonly backend: string;
  /** Each sign-up's wall time, ms. */
  readonly latencyMs: readonly number[];
  /** Requests to the store per sign-up (object stores; median), by method, and in all. */
  readonly requests: number | null;
  readonly byMethod: Readonly<Record<string, number>>;
  /** The median round trip of one request to the store, ms (object stores). */
  readonly requestMedianMs: number | null;
  /** Transactions per sign-up (PostgreSQL; median). */
  readonly transactions: number | null;
}

/**
 * A proxy that forwards every request to `upstream` and counts it: its headers as they are, the Host too where the
 * request's signature covers it (`keepHost`: S3's SigV4), else the upstream's (fake-gcs-server answers by it).
 */
async function countingProxy(upstream: { host: string; port: number; keepHost: boolean }): Promise<{ port: number; take(): { count: number; byMethod: Record<string, number>; times: number[] }; close(): Promise<void> }> {
  let byMethod: Record<string, number> = {};
  let times: number[] = [];
  const server = http.createServer((req, res) => {
    const started = performance.now();
    byMethod[req.method ?? "?"] = (byMethod[req.method ?? "?"] ?? 0) + 1;
    const forward = http.request({ host: upstream.host, port: upstream.port, method: req.method, path: req.url, headers: upstream.keepHost ? req.headers : { ...req.headers, host: `${upstream.host}:${upstream.port}` } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on("end", () => times.push(performance.now() - started));
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    take() {
      const taken = { count: Object.values(byMethod).reduce((a, b) => a + b, 0), byMethod, times };
      byMethod = {};
      times = [];
      return taken;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function transactions(backendUrl: string): Promise<number> {
  const client = new Client({ connectionString: backendUrl });
  await client.connect();
  try {
    const row = await client.query<{ n: string }>("SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()");
    return Number(row.rows[0]!.n);
  } finally {
    await client.end();
  }
}

export async function measureStoreCost(workRoot: string, log: (line: string) => void): Promise<StoreCostRow[]> {
  mkdirSync(workRoot, { recursive: true });
  const root = mkdtempSync(path.join(workRoot, "stores-"));
  const signups = Number(process.env["BENCH_STORES_SIGNUPS"] ?? "3");
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], journalSize: 100_000 });
  const rows: StoreCostRow[] = [];
  const env = {
    PULUMI_CONFIG_PASSPHRASE: "bench-stores",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_HOME: path.join(root, "pulumi-home"),
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: KEY,
  };
  const kinds: ReadonlyArray<readonly [string, (() => Promise<ObjectStore>) | undefined]> = [
    ["postgres", undefined],
    ["s3", startS3],
    ["azblob", startAzurite],
    ["gs", startGcs],
  ];
  try {
    for (const [backend, start] of kinds) {
      const postgres = start ? undefined : await startPostgres();
      const store = start ? await start() : undefined;
      const proxy = store ? await countingProxy({ host: "127.0.0.1", port: store.port, keepHost: store.kind === "s3" }) : undefined;
      try {
        let backendUrl = postgres?.backendUrl ?? "";
        let storeEnv: Record<string, string> = {};
        if (store && proxy) {
          await store.createBucket("bench-stores");
          backendUrl = store.backendUrl("bench-stores").replace(`127.0.0.1:${store.port}`, `127.0.0.1:${proxy.port}`);
          storeEnv = { ...store.env, ...(store.env["STORAGE_EMULATOR_HOST"] ? { STORAGE_EMULATOR_HOST: `127.0.0.1:${proxy.port}` } : {}) };
          // Our own stores in this process read the credentials (and the GCS emulator's address) from its environment.
          Object.assign(process.env, storeEnv);
        }
        const fleet = new UserGroupFleet({
          stack: "signups",
          backendUrl,
          workDir: path.join(root, backend),
          lockTimeoutMs: 60_000,
          envVars: { ...env, ...storeEnv, PATH: process.env["PATH"] ?? "" },
        });
        const latencyMs: number[] = [];
        const counts: number[] = [];
        const txs: number[] = [];
        const methods: Array<Record<string, number>> = [];
        const times: number[] = [];
        try {
          await fleet.ensure({ name: "First", userGroupId: `${backend}-first` });
          for (let i = 0; i < signups; i++) {
            proxy?.take();
            const before = postgres ? await transactions(postgres.backendUrl) : 0;
            const started = performance.now();
            await fleet.ensure({ name: `Signup ${i}`, userGroupId: `${backend}-signup-${i}` });
            latencyMs.push(performance.now() - started);
            // The lease's release and the stats' flush (at most once a second per session) settle first.
            await sleep(1_500);
            if (proxy) {
              const taken = proxy.take();
              counts.push(taken.count);
              methods.push(taken.byMethod);
              times.push(...taken.times);
            }
            if (postgres) txs.push((await transactions(postgres.backendUrl)) - before - 1);
          }
        } finally {
          await fleet.close();
        }
        const middle = methods[Math.floor(methods.length / 2)] ?? {};
        const row: StoreCostRow = {
          backend,
          latencyMs,
          requests: proxy ? median(counts) : null,
          byMethod: middle,
          requestMedianMs: proxy && times.length > 0 ? median(times) : null,
          transactions: postgres ? median(txs) : null,
        };
        rows.push(row);
        log(
          `stores ${backend}: sign-up ${latencyMs.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s; ` +
            (proxy ? `${row.requests} requests (${Object.entries(middle).map(([m, n]) => `${n} ${m}`).join(", ")}), one ${row.requestMedianMs!.toFixed(1)} ms (median)` : `${row.transactions} transactions`),
        );
      } finally {
        await proxy?.close();
        await store?.stop();
        postgres?.stop();
      }
    }
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
}

export function storeCostMarkdown(rows: readonly StoreCostRow[]): string {
  const s = (ms: number) => (ms / 1000).toFixed(1);
  return [
    "One replica, a stack that exists, one new group per sign-up (its wall time: lease, takeover check, one targeted `up`, release). Requests: every request to the store of every process of the run (a counting proxy in front of it), per sign-up (median), by method; transactions: PostgreSQL's committed or rolled back meanwhile.",
    "",
    "| backend | sign-up (s): median (each) | requests to the store per sign-up | by method | one request (ms, median) | transactions per sign-up |",
    "|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${s(median(r.latencyMs))} (${r.latencyMs.map(s).join(", ")}) | ${r.requests ?? "-"} | ${Object.entries(r.byMethod).map(([m, n]) => `${n} ${m}`).join(", ") || "-"} | ${r.requestMedianMs === null ? "-" : r.requestMedianMs.toFixed(1)} | ${r.transactions ?? "-"} |`,
    ),
  ].join("\n");
}
