// The one place that configures an OpenTelemetry SDK (docs/observability.md, "Turning
// it on"): for the `user-groups` CLI and the onboarding-service example, from the
// standard OTEL_* environment variables, and only when they ask for it. The SDK
// packages are loaded here, dynamically, once asked: with none of the variables set
// nothing of the SDK is even loaded. The library's own modules use the API only
// (provider/telemetry.ts); dependency-cruiser holds that only this module (and the
// benchmark) imports SDK packages.
//
// Read: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER (otlp, console,
// none), OTEL_EXPORTER_OTLP_PROTOCOL and its per-signal forms (grpc, http/protobuf,
// http/json), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_METRIC_EXPORT_INTERVAL;
// the OTLP exporters read their endpoint, headers, timeout, compression and
// certificates (OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT, ..._HEADERS, ...) from
// the process's environment themselves. TRACEPARENT / TRACESTATE in the environment
// (a GitOps job's span, as `pulumi` honours them) parent the command's root span.
import { type Context, context, metrics, propagation, ROOT_CONTEXT, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import type { MetricReader, PushMetricExporter } from "@opentelemetry/sdk-metrics";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { allowedAttributes, packageTracer, type TelemetryAttributes } from "../telemetry";
import { systemClock } from "../clock";
import { PACKAGE_VERSION } from "../version";
import { metricExportIntervalMs, otelExportersOf, type OtelEnv, otlpProtocolOf, telemetryRequested } from "../otel-env";

type Env = OtelEnv;

// The parsing of OTEL_* is shared with the provider processes (../otel-env.ts).
export { telemetryRequested };
const exportersOf = otelExportersOf;
const protocolOf = otlpProtocolOf;

/** How long the last export may hold a command's exit by default: an unreachable endpoint would hold it for the exporters' 10 s. */
export const SHUTDOWN_WAIT_MS = 2_000;

/** The wait for the last export: the user's OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]TIMEOUT (ms) when set, else SHUTDOWN_WAIT_MS. */
export function shutdownWaitMs(env: Env): number {
  const asked = [env.OTEL_EXPORTER_OTLP_TIMEOUT, env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, env.OTEL_EXPORTER_OTLP_METRICS_TIMEOUT]
    .map((text) => (text !== undefined && /^\d{1,7}$/.test(text.trim()) ? Number(text.trim()) : undefined))
    .filter((ms): ms is number => ms !== undefined);
  return asked.length > 0 ? Math.max(...asked) : SHUTDOWN_WAIT_MS;
}

/** Where the OTLP export went, for the line that says it was given up: the endpoint variable's value, without user info or query. */
function endpointOf(env: Env): string {
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!url) return "the OTLP endpoint";
  try {
    const parsed = new URL(url);
    return `the OTLP endpoint ${parsed.protocol}//${parsed.host}${parsed.pathname === "/" ? "" : parsed.pathname}`;
  } catch {
    return "the OTLP endpoint";
  }
}

async function spanExporterOf(kind: string, env: Env): Promise<SpanExporter> {
  if (kind === "console") return new (await import("@opentelemetry/sdk-trace-base")).ConsoleSpanExporter();
  if (kind !== "otlp") throw new Error(`OTEL_TRACES_EXPORTER: "${kind.slice(0, 40)}" is not one of otlp, console, none`);
  switch (protocolOf(env, "TRACES")) {
    case "grpc":
      return new (await import("@opentelemetry/exporter-trace-otlp-grpc")).OTLPTraceExporter();
    case "http/json":
      return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter();
    case "http/protobuf":
      return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter();
  }
}

async function metricExporterOf(kind: string, env: Env): Promise<PushMetricExporter> {
  if (kind === "console") return new (await import("@opentelemetry/sdk-metrics")).ConsoleMetricExporter();
  if (kind !== "otlp") throw new Error(`OTEL_METRICS_EXPORTER: "${kind.slice(0, 40)}" is not one of otlp, console, none`);
  switch (protocolOf(env, "METRICS")) {
    case "grpc":
      return new (await import("@opentelemetry/exporter-metrics-otlp-grpc")).OTLPMetricExporter();
    case "http/json":
      return new (await import("@opentelemetry/exporter-metrics-otlp-http")).OTLPMetricExporter();
    case "http/protobuf":
      return new (await import("@opentelemetry/exporter-metrics-otlp-proto")).OTLPMetricExporter();
  }
}

export interface Telemetry {
  /**
   * Runs `work` in a root span named `name` (the parent: TRACEPARENT of the environment,
   * if any), the active span while it runs; ends it when `work` settles.
   */
  inRootSpan<T>(name: string, attributes: TelemetryAttributes, work: (span: Span) => Promise<T>): Promise<T>;
  /**
   * Exports what is left (spans, a last collection of the metrics) and stops the SDK,
   * waiting at most shutdownWaitMs. Never throws. Resolves with a line to show when it
   * gave up (an endpoint that takes nothing), else undefined.
   */
  shutdown(): Promise<string | undefined>;
}

export interface TelemetryOptions {
  /** `service.name` when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names none. */
  readonly serviceName: string;
}

/**
 * Registers an SDK (tracer and meter providers, W3C trace-context and baggage
 * propagation, async context) configured from `env` when it asks for telemetry
 * (telemetryRequested); undefined, and nothing loaded, when it does not.
 */
export async function startTelemetry(env: Env, options: TelemetryOptions): Promise<Telemetry | undefined> {
  if (!telemetryRequested(env)) return undefined;
  const [{ AsyncLocalStorageContextManager }, core, resources, traceSdk, metricsSdk] = await Promise.all([
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/sdk-metrics"),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": options.serviceName, "service.version": PACKAGE_VERSION }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));

  const spanExporters = await Promise.all(exportersOf(env.OTEL_TRACES_EXPORTER).map((kind) => spanExporterOf(kind, env)));
  const metricExporters = await Promise.all(exportersOf(env.OTEL_METRICS_EXPORTER).map((kind) => metricExporterOf(kind, env)));
  const readers: MetricReader[] = metricExporters.map((exporter) => new metricsSdk.PeriodicExportingMetricReader({ exporter, exportIntervalMillis: metricExportIntervalMs(env) }));

  const contextManager = new AsyncLocalStorageContextManager().enable();
  const tracerProvider = new traceSdk.BasicTracerProvider({ resource, spanProcessors: spanExporters.map((exporter) => new traceSdk.BatchSpanProcessor(exporter)) });
  const meterProvider = new metricsSdk.MeterProvider({ resource, readers });
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }));
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);

  const tracer = packageTracer(PACKAGE_VERSION);
  let stopped = false;
  return {
    inRootSpan<T>(name: string, attributes: TelemetryAttributes, work: (span: Span) => Promise<T>): Promise<T> {
      const parent: Context = env.TRACEPARENT ? propagation.extract(ROOT_CONTEXT, { traceparent: env.TRACEPARENT, ...(env.TRACESTATE ? { tracestate: env.TRACESTATE } : {}) }) : ROOT_CONTEXT;
      const span = tracer.startSpan(name, {}, parent);
      span.setAttributes(allowedAttributes(attributes));
      return context.with(trace.setSpan(parent, span), async () => {
        try {
          return await work(span);
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      });
    },
    async shutdown(): Promise<string | undefined> {
      if (stopped) return undefined;
      stopped = true;
      // Spans and metrics of a short run must arrive: flushed, then stopped; but an endpoint that takes nothing
      // (unreachable, refusing) would hold the exit for the exporters' own 10 s and their retries, silently.
      const waitMs = shutdownWaitMs(env);
      const giveUp = new AbortController();
      const finished = Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]).then(() => "done" as const);
      const outcome = await Promise.race([finished, systemClock.sleep(waitMs, giveUp.signal).then(() => "timed-out" as const, () => "done" as const)]);
      giveUp.abort();
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
      if (outcome === "done") return undefined;
      return (
        `OpenTelemetry: ${endpointOf(env)} did not take the last spans and metrics within ${waitMs / 1000} s; they were dropped. ` +
        "Check OTEL_EXPORTER_OTLP_ENDPOINT (is the collector up and reachable from here?), or set OTEL_EXPORTER_OTLP_TIMEOUT (ms) to wait longer."
      );
    },
  };
}
