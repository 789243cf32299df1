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
import { PACKAGE_VERSION } from "../version";
import { metricExportIntervalMs, otelExportersOf, type OtelEnv, otlpProtocolOf, telemetryRequested } from "../otel-env";

type Env = OtelEnv;

// The parsing of OTEL_* is shared with the provider processes (../otel-env.ts).
export { telemetryRequested };
const exportersOf = otelExportersOf;
const protocolOf = otlpProtocolOf;

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
  /** Exports what is left (spans, a last collection of the metrics) and stops the SDK. Never throws. */
  shutdown(): Promise<void>;
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
    async shutdown(): Promise<void> {
      if (stopped) return;
      stopped = true;
      // Spans and metrics of a short run must arrive: flushed, then stopped (each exporter's own timeout bounds it).
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}
