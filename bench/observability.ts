// The cost of the package's telemetry (docs/observability.md, "Off by default, free
// when off"), with no OpenTelemetry SDK registered and with one (a batching span
// processor into an in-memory exporter, a meter provider with a reader), each phase
// in a process of its own (an SDK once registered leaves its tracer behind the API's
// proxies), phases alternating:
//   - the automation layers' spans per call (inSpan: a fleet batch / shard-plan /
//     drift span; engineRun: an engine run's span, counter and histogram;
//     LeaseWait.acquired: a lease wait's span and histogram), in microseconds;
//   - the HTTP client against the fake server (a worker thread), 8 in flight:
//     requests per second and the client's busy time per request (each attempt a
//     span, a traceparent header, the duration histogram).
import { context, metrics, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AggregationTemporality, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { execFile } from "node:child_process";
import { performance } from "node:perf_hooks";
import { engineRun, inSpan, LeaseWait } from "../provider/automation/internal.js";
import { UserGroupsClient } from "../provider/client/http-client.js";
import { KEY, startServerThread } from "./fake-server.js";
import { closedLoop } from "./load.js";

class Reader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** Registers an SDK as an application would; returns what takes it down again (flushing). */
function registerSdk(): () => Promise<void> {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 100_000, maxExportBatchSize: 4096, scheduledDelayMillis: 200 })] });
  const reader = new Reader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  const drain = setInterval(() => exporter.reset(), 500);
  return async () => {
    clearInterval(drain);
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
    trace.disable();
    metrics.disable();
    propagation.disable();
    context.disable();
  };
}

export interface PhaseFigures {
  /** µs per call of each helper. */
  readonly inSpanUs: number;
  readonly engineRunUs: number;
  readonly leaseWaitUs: number;
  /** The HTTP client against the fake server. */
  readonly rps: number;
  readonly clientUsPerRequest: number;
}

export interface ObservabilityResults {
  readonly rounds: number;
  readonly off: PhaseFigures[];
  readonly on: PhaseFigures[];
}

/** µs per call of `work`, less the same loop around a bare async function: the best of 5 slices (the least disturbed). */
async function perCallUs(calls: number, work: () => Promise<unknown>): Promise<number> {
  const bare = async () => undefined;
  const slice = Math.max(1, Math.floor(calls / 5));
  for (let i = 0; i < 1000; i++) await work(); // warm-up
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    let started = performance.now();
    for (let i = 0; i < slice; i++) await bare();
    const floor = performance.now() - started;
    started = performance.now();
    for (let i = 0; i < slice; i++) await work();
    best = Math.min(best, ((performance.now() - started - floor) * 1000) / slice);
  }
  return Math.max(0, best);
}

async function phase(client: UserGroupsClient, calls: number, seconds: number): Promise<PhaseFigures> {
  const nothing = async () => undefined;
  const inSpanUs = await perCallUs(calls, () => inSpan("bench.span", { "user_groups.operation": "ensure", "user_groups.stack": "bench", "user_groups.batch.size": 3 }, nothing));
  const engineRunUs = await perCallUs(calls, () => engineRun("up", "bench", nothing, 0));
  const leaseWaitUs = await perCallUs(calls, async () => new LeaseWait("bench").acquired(7));
  const group = { name: "Bench", user_group_id: "bench-observability" };
  const eluBefore = performance.eventLoopUtilization();
  const run = await closedLoop(async () => !(await client.getOrCreate(group)).response.new_user_group, 8, seconds);
  const elu = performance.eventLoopUtilization(eluBefore);
  return { inSpanUs, engineRunUs, leaseWaitUs, rps: run.requests / run.seconds, clientUsPerRequest: (elu.active * 1000) / run.requests };
}

/** One phase, in this process: with an SDK registered (`sdk`) or none. */
async function runPhase(sdk: boolean, calls: number, seconds: number): Promise<PhaseFigures> {
  const server = await startServerThread("fake");
  const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
  const unregister = sdk ? registerSdk() : undefined;
  try {
    await client.getOrCreate({ name: "Bench", user_group_id: "bench-observability" });
    return await phase(client, calls, seconds);
  } finally {
    await unregister?.();
    await client.close();
    await server.close();
  }
}

function phaseInChild(sdk: boolean, calls: number, seconds: number): Promise<PhaseFigures> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [__filename, "--phase", sdk ? "on" : "off", String(calls), String(seconds)], { env: { ...process.env, USER_GROUPS_RATE_LIMIT: "off" } }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as PhaseFigures),
    ),
  );
}

/** Alternates off and on phases `rounds` times, each in a process of its own. */
export async function measureObservability(options: { rounds: number; calls: number; seconds: number }, log: (line: string) => void): Promise<ObservabilityResults> {
  const off: PhaseFigures[] = [];
  const on: PhaseFigures[] = [];
  for (let round = 0; round < options.rounds; round++) {
    off.push(await phaseInChild(false, options.calls, options.seconds));
    log(`  off: ${JSON.stringify(off.at(-1))}`);
    on.push(await phaseInChild(true, options.calls, options.seconds));
    log(`  on:  ${JSON.stringify(on.at(-1))}`);
  }
  return { rounds: options.rounds, off, on };
}

if (require.main === module && process.argv[2] === "--phase") {
  runPhase(process.argv[3] === "on", Number(process.argv[4]), Number(process.argv[5])).then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (error: unknown) => {
      process.stderr.write(`${String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function observabilityMarkdown(results: ObservabilityResults): string {
  const row = (label: string, key: keyof PhaseFigures, digits: number) =>
    `| ${label} | ${median(results.off.map((f) => f[key])).toFixed(digits)} | ${median(results.on.map((f) => f[key])).toFixed(digits)} |`;
  return [
    `Medians of ${results.rounds} rounds, phases alternating, each in a process of its own (no SDK; an SDK with a batching span processor into memory and a metric reader). ` +
      "Per-call figures: the best of 5 slices, less the same loop around a bare async function.",
    "",
    "| | no SDK | SDK registered |",
    "|---|---|---|",
    row("a fleet / operation span (inSpan), µs per call", "inSpanUs", 2),
    row("an engine run's span, counter, histogram (engineRun around no work), µs", "engineRunUs", 2),
    row("a lease wait's span and histogram, µs", "leaseWaitUs", 2),
    row("HTTP client vs the fake server, 8 in flight: requests/s", "rps", 0),
    row("HTTP client busy time per request, µs", "clientUsPerRequest", 1),
    "",
  ].join("\n");
}
