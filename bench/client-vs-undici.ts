// Our HTTP client against raw undici.request doing the same request: a GET
// (get-or-create) of an existing group, same JSON body, same fake server (in a
// worker thread), same number of requests in flight. What is left between the
// two is our client's own per-request work: retries bookkeeping, pacing,
// response validation, redaction.
import { performance } from "node:perf_hooks";
import { request } from "undici";
import { UserGroupsClient } from "../provider/client/http-client.js";
import { KEY, startServerThread } from "./fake-server.js";
import { closedLoop, type OneRequest } from "./load.js";

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly seconds: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /**
   * Main-thread (client) event-loop busy time per request, in microseconds.
   * When the server saturates first, throughput hides the client's cost; this does not.
   */
  readonly clientUsPerRequest: number;
}

export interface ClientComparison {
  readonly inFlight: number;
  readonly seconds: number;
  readonly rounds: number;
  /** The best round of each (the least disturbed by other work on the machine). */
  readonly raw: LoadResult;
  readonly ours: LoadResult;
  /** Requests per second, ours / raw (goal >= 0.90). */
  readonly ratio: number;
  /** Client busy time per request, raw / ours (1.00 = ours costs the client no more than raw undici). */
  readonly costRatio: number;
}

const GROUP = { name: "Bench", user_group_id: "bench-client", mapping: { sales: "warehouse-eu" } };
const BODY = JSON.stringify(GROUP);
const HEADERS = {
  authorization: `Token ${KEY}`,
  "content-type": "application/json",
  accept: "application/json",
  "user-agent": "bench",
};

async function load(send: OneRequest, inFlight: number, seconds: number): Promise<LoadResult> {
  const eluBefore = performance.eventLoopUtilization();
  const run = await closedLoop(send, inFlight, seconds);
  const elu = performance.eventLoopUtilization(eluBefore);
  return { ...run, rps: run.requests / run.seconds, clientUsPerRequest: (elu.active * 1000) / run.requests };
}

function best(a: LoadResult | undefined, b: LoadResult): LoadResult {
  return a === undefined || b.rps > a.rps ? b : a;
}

/** Alternates raw and ours for `rounds` rounds of `seconds` each (after a warm-up of each). */
export async function compareClients(options: { seconds: number; rounds: number; inFlight: number }): Promise<ClientComparison> {
  const server = await startServerThread("fake");
  const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
  const url = `${server.url}/api/user`;
  const raw: OneRequest = async () => {
    // reset: false keeps the connection after a GET with a body, as our client does (undici closes it by default).
    const res = await request(url, { method: "GET", headers: HEADERS, body: BODY, reset: false });
    // The least a caller can do with the answer: read and parse it.
    const parsed = (await res.body.json()) as { success?: unknown };
    return res.statusCode === 200 && parsed.success === 1;
  };
  const ours: OneRequest = async () => {
    const { response } = await client.getOrCreate(GROUP);
    return !response.new_user_group;
  };
  try {
    await ours(); // creates the group: every measured request finds it existing
    await load(raw, options.inFlight, 1);
    await load(ours, options.inFlight, 1);
    let bestRaw: LoadResult | undefined;
    let bestOurs: LoadResult | undefined;
    for (let round = 0; round < options.rounds; round++) {
      bestRaw = best(bestRaw, await load(raw, options.inFlight, options.seconds));
      bestOurs = best(bestOurs, await load(ours, options.inFlight, options.seconds));
    }
    if (bestRaw === undefined || bestOurs === undefined) throw new Error("rounds must be at least 1");
    return {
      inFlight: options.inFlight,
      seconds: options.seconds,
      rounds: options.rounds,
      raw: bestRaw,
      ours: bestOurs,
      ratio: bestOurs.rps / bestRaw.rps,
      costRatio: bestRaw.clientUsPerRequest / bestOurs.clientUsPerRequest,
    };
  } finally {
    await client.close();
    await server.close();
  }
}
