// A real OpenTelemetry Collector (scripts/ensure-otelcol: v0.161.0, the OTLP receiver
// and the file exporter) as the OTLP endpoint of the observability tests and the trace
// pictures: started on free 127.0.0.1 ports with a generated configuration (OTLP gRPC
// and HTTP in; traces and metrics each to a JSON-lines file in a 0700 temporary
// directory), read back into plain spans and metric points, and the spans put in a tree
// (text here, SVG in trace-svg.ts).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./free-port";
import { type CollectedMetricPoint, type CollectedSpan, readMetrics, readSpans } from "./otlp-json";

const REPO_ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}build${path.sep}`) ? "../.." : "..");

/** The collector's binary (builds it on first use: scripts/ensure-otelcol; cached after). */
export function otelcolBinary(): string {
  const stdout = execFileSync(path.join(REPO_ROOT, "scripts", "ensure-otelcol"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const dir = stdout.trim().split("\n").at(-1);
  if (!dir) throw new Error("scripts/ensure-otelcol printed no bin directory");
  return path.join(dir, "otelcol");
}

// What the file exporter writes, read back: otlp-json.ts (also the reader of the
// engine's own `--otel-traces file://` output).
export {
  type AttributeValue,
  type CollectedAttributes,
  type CollectedMetricPoint,
  type CollectedSpan,
  type CollectedSpanKind,
  readMetrics,
  readSpans,
} from "./otlp-json";

// ---------------------------------------------------------------------------
// The collector process.

export interface OtelCollector {
  /** OTLP over gRPC: `http://127.0.0.1:<port>` (what OTEL_EXPORTER_OTLP_ENDPOINT takes with the grpc protocol). */
  readonly grpcEndpoint: string;
  /** OTLP over HTTP: `http://127.0.0.1:<port>` (the exporters append /v1/traces, /v1/metrics). */
  readonly httpEndpoint: string;
  /** The 0700 directory holding the configuration and the exported files. */
  readonly dir: string;
  readonly tracesFile: string;
  readonly metricsFile: string;
  /** The spans exported so far. */
  spans(): CollectedSpan[];
  /** The metric points exported so far. */
  metrics(): CollectedMetricPoint[];
  /** Polls the exported spans until `done` holds (then answers them), or fails after `timeoutMs` with what arrived. */
  waitForSpans(done: (spans: CollectedSpan[]) => boolean, timeoutMs?: number): Promise<CollectedSpan[]>;
  /** Polls the exported metric points until `done` holds. */
  waitForMetrics(done: (points: CollectedMetricPoint[]) => boolean, timeoutMs?: number): Promise<CollectedMetricPoint[]>;
  /** The collector's own log (stderr), for failure messages. */
  log(): string;
  /** Stops it (its exporters flush first) and removes its directory unless `keep`. */
  stop(options?: { keep?: boolean }): Promise<void>;
}

export interface OtelCollectorOptions {
  /** Also print what arrives to the collector's log (the debug exporter, basic verbosity). */
  readonly debug?: boolean;
  /** How often the file exporter writes what it received (default 100 ms). */
  readonly flushIntervalMs?: number;
}

function config(grpcPort: number, httpPort: number, tracesFile: string, metricsFile: string, options: OtelCollectorOptions): string {
  const flush = `${options.flushIntervalMs ?? 100}ms`;
  const debug = options.debug ? ", debug" : "";
  // JSON is YAML: no quoting questions for paths.
  return JSON.stringify(
    {
      receivers: { otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${grpcPort}` }, http: { endpoint: `127.0.0.1:${httpPort}` } } } },
      exporters: {
        "file/traces": { path: tracesFile, flush_interval: flush },
        "file/metrics": { path: metricsFile, flush_interval: flush },
        ...(options.debug ? { debug: { verbosity: "basic" } } : {}),
      },
      service: {
        // No self-metrics endpoint (its default :8888 would collide between collectors).
        telemetry: { metrics: { level: "none" }, logs: { level: "info" } },
        pipelines: {
          traces: { receivers: ["otlp"], exporters: ["file/traces", ...(debug ? ["debug"] : [])] },
          metrics: { receivers: ["otlp"], exporters: ["file/metrics", ...(debug ? ["debug"] : [])] },
        },
      },
    },
    null,
    2,
  );
}

const READY = "Everything is ready";

/** Starts a collector and waits until it accepts OTLP (it logs that it is ready). */
export async function startOtelCollector(options: OtelCollectorOptions = {}): Promise<OtelCollector> {
  const binary = otelcolBinary();
  const dir = mkdtempSync(path.join(os.tmpdir(), "otelcol-")); // 0700
  const tracesFile = path.join(dir, "traces.jsonl");
  const metricsFile = path.join(dir, "metrics.jsonl");
  const configFile = path.join(dir, "config.yaml");
  let log = "";
  let child: ChildProcess | undefined;
  let grpcPort = 0;
  let httpPort = 0;
  for (let attempt = 1; ; attempt++) {
    grpcPort = await freePort();
    httpPort = await freePort();
    if (grpcPort === httpPort) continue;
    writeFileSync(configFile, config(grpcPort, httpPort, tracesFile, metricsFile, options), { mode: 0o600 });
    log = "";
    child = spawn(binary, ["--config", `file:${configFile}`], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    const started = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 30_000);
      child!.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        log = (log + chunk).slice(-20_000);
        if (log.includes(READY)) {
          clearTimeout(timer);
          resolve(true);
        }
      });
      child!.once("exit", () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (started) break;
    kill(child, "SIGKILL");
    // A port taken between freePort() and the bind: try others.
    if (attempt >= 3) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`the OpenTelemetry Collector did not start:\n${log}`);
    }
  }
  const proc = child!;
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once("exit", () => resolve());
  });

  const poll = async <T>(read: () => T[], done: (items: T[]) => boolean, timeoutMs: number, what: string): Promise<T[]> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const items = read();
      if (done(items)) return items;
      if (Date.now() > deadline) {
        const seen = what === "spans" ? renderSpanTree(items as CollectedSpan[]) : (items as CollectedMetricPoint[]).map((p) => p.name).join(", ");
        throw new Error(`the collector did not receive the expected ${what} within ${timeoutMs} ms; it has ${items.length}:\n${seen}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  return {
    grpcEndpoint: `http://127.0.0.1:${grpcPort}`,
    httpEndpoint: `http://127.0.0.1:${httpPort}`,
    dir,
    tracesFile,
    metricsFile,
    spans: () => readSpans(tracesFile),
    metrics: () => readMetrics(metricsFile),
    waitForSpans: (done, timeoutMs = 20_000) => poll(() => readSpans(tracesFile), done, timeoutMs, "spans"),
    waitForMetrics: (done, timeoutMs = 20_000) => poll(() => readMetrics(metricsFile), done, timeoutMs, "metrics"),
    log: () => log,
    async stop({ keep = false } = {}) {
      kill(proc, "SIGTERM");
      const timer = setTimeout(() => kill(proc, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // gone
  }
}

/**
 * The standard OTEL_* variables that point an SDK configured from the environment
 * (NodeSDK, the `user-groups` CLI, the onboarding-service example) at the collector.
 */
export function otlpEnvironment(collector: OtelCollector, serviceName: string, protocol: "grpc" | "http/protobuf" = "grpc"): Record<string, string> {
  return {
    OTEL_SERVICE_NAME: serviceName,
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_METRICS_EXPORTER: "otlp",
    OTEL_LOGS_EXPORTER: "none",
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_ENDPOINT: protocol === "grpc" ? collector.grpcEndpoint : collector.httpEndpoint,
    OTEL_METRIC_EXPORT_INTERVAL: "500",
    OTEL_BSP_SCHEDULE_DELAY: "200",
  };
}

// ---------------------------------------------------------------------------
// The tree.

export interface SpanNode {
  readonly span: CollectedSpan;
  readonly depth: number;
  readonly children: SpanNode[];
}

/**
 * The spans as trees, children in start order: a span whose parent is not among them
 * (the root, or one whose parent was not exported) is a root.
 */
export function spanTree(spans: readonly CollectedSpan[]): SpanNode[] {
  const byId = new Map(spans.map((s) => [`${s.traceId}/${s.spanId}`, s]));
  const children = new Map<string, CollectedSpan[]>();
  const roots: CollectedSpan[] = [];
  for (const s of spans) {
    const parent = s.parentSpanId ? `${s.traceId}/${s.parentSpanId}` : undefined;
    if (parent && byId.has(parent)) {
      const list = children.get(parent) ?? [];
      list.push(s);
      children.set(parent, list);
    } else roots.push(s);
  }
  const order = (a: CollectedSpan, b: CollectedSpan) => a.startMs - b.startMs || a.endMs - b.endMs;
  const build = (s: CollectedSpan, depth: number): SpanNode => ({
    span: s,
    depth,
    children: (children.get(`${s.traceId}/${s.spanId}`) ?? []).sort(order).map((c) => build(c, depth + 1)),
  });
  return roots.sort(order).map((r) => build(r, 0));
}

/** The tree's nodes depth-first (the order a waterfall lists them). */
export function flatten(nodes: readonly SpanNode[]): SpanNode[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)]);
}

/** The ancestors of `span` (its parent first) among `spans`. */
export function ancestors(spans: readonly CollectedSpan[], span: CollectedSpan): CollectedSpan[] {
  const byId = new Map(spans.map((s) => [`${s.traceId}/${s.spanId}`, s]));
  const out: CollectedSpan[] = [];
  for (let s = span; s.parentSpanId; ) {
    const parent = byId.get(`${s.traceId}/${s.parentSpanId}`);
    if (!parent) break;
    out.push(parent);
    s = parent;
  }
  return out;
}

/**
 * The tree as text, one span a line, indented by depth: name, kind, service, start
 * offset and duration from the earliest root; `show` names attributes to print too
 * (only names the caller knows carry no secret).
 */
export function renderSpanTree(spans: readonly CollectedSpan[], show: readonly string[] = []): string {
  const nodes = flatten(spanTree(spans));
  const t0 = Math.min(...spans.map((s) => s.startMs));
  return nodes
    .map(({ span, depth }) => {
      const attrs = show.filter((k) => span.attributes[k] !== undefined).map((k) => `${k}=${JSON.stringify(span.attributes[k])}`);
      const status = span.statusCode === 2 ? " ERROR" : "";
      const timing = `+${(span.startMs - t0).toFixed(1)}ms ${(span.endMs - span.startMs).toFixed(1)}ms`;
      return `${"  ".repeat(depth)}${span.name} [${span.kind.toLowerCase()}${span.service ? ` ${span.service}` : ""}] ${timing}${status}${attrs.length ? ` ${attrs.join(" ")}` : ""}`;
    })
    .join("\n");
}
