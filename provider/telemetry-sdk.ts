// A provider process's tracing when the Pulumi engine runs with `--otel-traces`
// (loaded by telemetry-preload.ts only then): a tracer provider exporting over
// OTLP gRPC to the engine's own receiver, the W3C propagator, an async-hooks
// context manager (NodeTracerProvider.register), and a SERVER span around each
// unary gRPC call of the provider's server, the child of the engine's CLIENT
// span whose `traceparent` came in the call's metadata. The UserGroup spans
// (logic/lifecycle.ts) and the HTTP client's spans run inside it.
//
// The engine kills its plugins (SIGKILL) as soon as it is done with them, so
// spans left in a buffer would be lost: each call's spans are flushed to the
// receiver before its answer goes back (at most FLUSH_CAP_MS, so a receiver
// that stopped answering never holds a call up for long).
//
// Metrics (startProviderMetrics, loaded by telemetry-preload.ts when the OTEL_*
// variables the process inherited from the engine ask for OTLP metrics): a meter
// provider exporting the HTTP client's instruments (http.client.request.duration,
// retries, 429s, rate-budget waits) to the OTLP endpoint of OTEL_*, flushed with
// the spans before each answer for the same reason.
//
// The trace SDK packages are @pulumi/pulumi's own dependencies, loaded through it (as
// plugin/server-hooks.ts loads its grpc-js); the metrics SDK and its OTLP exporters
// (not among them) are this package's dependencies for the CLI, loaded through
// createRequire as well: the library's modules import only @opentelemetry/api.
import { createRequire } from "node:module";
import { context, type MeterProvider, metrics, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace } from "@opentelemetry/api";
import { systemClock } from "./clock";
import { metricExportIntervalMs, type OtelEnv, otlpProtocolOf } from "./otel-env";
import { allowedAttributes, errorType, packageTracer } from "./telemetry";
import { PACKAGE_VERSION } from "./version";

/** The longest a call's answer waits for its spans to reach the receiver. */
export const FLUSH_CAP_MS = 2_000;

/** The names the process has in the trace (`service.name`). */
export const SERVICE_NAMES = {
  dynamic: "pulumi-user-groups-dynamic-provider",
  plugin: "pulumi-resource-user-groups",
} as const;

interface TracerProviderLike {
  register(config: { propagator: unknown }): void;
  forceFlush(): Promise<void>;
}
interface SdkTraceNode {
  NodeTracerProvider: new (config: { resource: unknown; spanProcessors: unknown[] }) => TracerProviderLike;
}
interface SdkTraceBase {
  BatchSpanProcessor: new (exporter: unknown, config?: { scheduledDelayMillis?: number }) => unknown;
}
interface OtlpGrpcExporter {
  OTLPTraceExporter: new (config: { url: string }) => unknown;
}
interface Core {
  W3CTraceContextPropagator: new () => unknown;
}
interface Resources {
  resourceFromAttributes(attributes: Record<string, string>): unknown;
}
interface MeterProviderLike {
  forceFlush(): Promise<void>;
}
interface SdkMetrics {
  MeterProvider: new (config: { resource: unknown; readers: unknown[] }) => MeterProviderLike;
  PeriodicExportingMetricReader: new (config: { exporter: unknown; exportIntervalMillis?: number }) => unknown;
}
interface OtlpMetricExporterModule {
  OTLPMetricExporter: new () => unknown;
}

interface MethodDefinition {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}
type Callback = (error: unknown, ...rest: unknown[]) => void;
interface ServerCall {
  readonly metadata?: { getMap(): Record<string, unknown> };
}
type UnaryHandler = (this: unknown, call: ServerCall, callback: Callback) => unknown;
interface GrpcModule {
  Server: { prototype: { addService(service: Record<string, MethodDefinition>, implementation: Record<string, unknown>): void } };
  status: Record<string, number | string>;
}

/** What is flushed before each answer: the tracer provider's spans, the meter provider's metrics. */
const flushers: Array<() => Promise<void>> = [];
let tracing = false;
let metering = false;
let hookedGrpc: unknown;

/**
 * A flusher that never starts a flush while its last one is still running: an
 * endpoint that stopped answering (a collector black-holed by a firewall) holds
 * one answer up for FLUSH_CAP_MS, not every answer until the exporter's own
 * timeout (10 s by default) gives up; the flushes after it go on once it settles.
 */
function oneAtATime(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    if (running !== undefined) return Promise.resolve();
    const current = flush()
      .catch(() => {}) // an export that failed costs the telemetry, never the call
      .finally(() => {
        if (running === current) running = undefined;
      });
    running = current;
    return current;
  };
}

/** Flushes everything recorded so far, at most FLUSH_CAP_MS; never fails. */
function flushAll(): Promise<void> {
  if (flushers.length === 0) return Promise.resolve();
  const capped = new AbortController();
  const cap = systemClock.sleep(FLUSH_CAP_MS, capped.signal, { keepAlive: false }).catch(() => {});
  const flushed = Promise.allSettled(flushers.map((flush) => flush())).then(() => capped.abort());
  return Promise.race([cap, flushed]).then(() => {});
}

/** Hooks the gRPC server of `serverRequire`'s grpc-js once: each unary call in a SERVER span, flushed before its answer. */
function hookOnce(serverRequire: NodeJS.Require): void {
  const grpc = serverRequire("@grpc/grpc-js") as GrpcModule;
  if (hookedGrpc === grpc) return;
  hookedGrpc = grpc;
  hookGrpcServer(grpc, flushAll);
}

/** A metadata map's value as text (grpc-js gives strings, or Buffers for `-bin` keys). */
const metadataGetter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === "string" ? value : undefined;
  },
};

/** The receiver's address as a URL: it listens on 127.0.0.1 but names itself `localhost` (which may resolve to ::1 first). */
export function receiverUrl(endpoint: string): string {
  const address = endpoint.replace(/^[a-z]+:\/\//i, "");
  return `http://${address.replace(/^localhost(?=:|$)/i, "127.0.0.1")}`;
}

/**
 * Registers the tracer provider, propagator and context manager, and hooks the
 * gRPC server the provider is about to start: the grpc-js that `serverModule`
 * (the server's main module) resolves, by default @pulumi/pulumi's. Once per
 * process; true when on.
 */
export function startProviderTracing(endpoint: string, provider: keyof typeof SERVICE_NAMES, serverModule?: string): boolean {
  if (tracing) return true;
  // What @pulumi/pulumi itself loads: the same grpc-js as its provider servers.
  const pulumiRequire = createRequire(require.resolve("@pulumi/pulumi"));
  const { NodeTracerProvider } = pulumiRequire("@opentelemetry/sdk-trace-node") as SdkTraceNode;
  const { BatchSpanProcessor } = pulumiRequire("@opentelemetry/sdk-trace-base") as SdkTraceBase;
  const { OTLPTraceExporter } = pulumiRequire("@opentelemetry/exporter-trace-otlp-grpc") as OtlpGrpcExporter;
  const { W3CTraceContextPropagator } = pulumiRequire("@opentelemetry/core") as Core;
  const { resourceFromAttributes } = pulumiRequire("@opentelemetry/resources") as Resources;
  const tracerProvider = new NodeTracerProvider({
    // No resource detectors: the process's command line and environment stay out of the trace.
    resource: resourceFromAttributes({ "service.name": SERVICE_NAMES[provider], "service.version": PACKAGE_VERSION }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: receiverUrl(endpoint) }))],
  });
  tracerProvider.register({ propagator: new W3CTraceContextPropagator() });
  tracing = true;
  flushers.push(oneAtATime(() => tracerProvider.forceFlush()));
  hookOnce(serverModule === undefined ? pulumiRequire : createRequire(serverModule));
  return true;
}

/** The OTLP metric exporter packages, by protocol (they read their endpoint, headers, timeout... from OTEL_* themselves). */
const METRIC_EXPORTERS = {
  grpc: "@opentelemetry/exporter-metrics-otlp-grpc",
  "http/protobuf": "@opentelemetry/exporter-metrics-otlp-proto",
  "http/json": "@opentelemetry/exporter-metrics-otlp-http",
} as const;

/**
 * Registers a meter provider exporting over OTLP as the OTEL_* variables of `env`
 * say (protocol, export interval; the exporter reads the endpoint, headers, ...
 * from the process's environment), and hooks the gRPC server the provider is
 * about to start so the metrics are flushed before each answer. Once per
 * process; true when on. Throws on a bad protocol (the preload says so and runs without).
 */
export function startProviderMetrics(env: OtelEnv, provider: keyof typeof SERVICE_NAMES, serverModule?: string): boolean {
  if (metering) return true;
  const exporterPackage = METRIC_EXPORTERS[otlpProtocolOf(env, "METRICS")];
  const ownRequire = createRequire(__filename);
  const { MeterProvider, PeriodicExportingMetricReader } = ownRequire("@opentelemetry/sdk-metrics") as SdkMetrics;
  const { resourceFromAttributes } = ownRequire("@opentelemetry/resources") as Resources;
  const { OTLPMetricExporter } = ownRequire(exporterPackage) as OtlpMetricExporterModule;
  const meterProvider = new MeterProvider({
    resource: resourceFromAttributes({ "service.name": SERVICE_NAMES[provider], "service.version": PACKAGE_VERSION }),
    readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis: metricExportIntervalMs(env) })],
  });
  // Only answers after which something was recorded wait for an export (a Check, a Configure, ... make no request).
  let recorded = false;
  metrics.setGlobalMeterProvider(recordingTracked(meterProvider as unknown as MeterProvider, () => (recorded = true)));
  metering = true;
  const flushMetrics = oneAtATime(() => meterProvider.forceFlush());
  flushers.push(() => {
    if (!recorded) return Promise.resolve();
    recorded = false;
    return flushMetrics();
  });
  hookOnce(createRequire(serverModule ?? require.resolve("@pulumi/pulumi")));
  return true;
}

/** A meter provider whose synchronous instruments call `onRecord` each time they record (`add`, `record`). */
export function recordingTracked(provider: MeterProvider, onRecord: () => void): MeterProvider {
  const tracked = <T extends object>(instrument: T): T =>
    new Proxy(instrument, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        if (property === "add" || property === "record") {
          return (...args: unknown[]) => {
            onRecord();
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
  return {
    getMeter(name, version, options) {
      const meter = provider.getMeter(name, version, options);
      return new Proxy(meter, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== "function") return value;
          const bound = (value as (...a: unknown[]) => unknown).bind(target);
          // Synchronous instruments only (an observable one is read at collection, by the reader).
          if (property === "createCounter" || property === "createHistogram" || property === "createUpDownCounter" || property === "createGauge") {
            return (...args: unknown[]) => tracked(bound(...args) as object);
          }
          return bound;
        },
      });
    },
  };
}

/** Flushes the spans and metrics recorded so far (no-op when telemetry is off). */
export function flushProviderSpans(): Promise<void> {
  return flushAll();
}

/** Wraps each unary handler a server registers from now on in a SERVER span. */
function hookGrpcServer(grpc: GrpcModule, flush: () => Promise<void>): void {
  const statusNames = new Map<number, string>();
  for (const [name, value] of Object.entries(grpc.status)) if (typeof value === "number") statusNames.set(value, name);
  const tracer = packageTracer(PACKAGE_VERSION);
  const prototype = grpc.Server.prototype;
  const addService = prototype.addService;
  prototype.addService = function (this: unknown, service, implementation) {
    const traced: Record<string, unknown> = { ...implementation };
    for (const [name, method] of Object.entries(service)) {
      const handler = implementation[name];
      if (typeof handler !== "function" || method.requestStream || method.responseStream) continue;
      traced[name] = tracedHandler(method.path, handler as UnaryHandler, implementation);
    }
    addService.call(this, service, traced);
  };

  function tracedHandler(methodPath: string, handler: UnaryHandler, self: unknown): UnaryHandler {
    const [service = "", method = ""] = methodPath.replace(/^\//, "").split("/");
    const name = `${service}/${method}`;
    return (call, callback) => {
      const parent = propagation.extract(ROOT_CONTEXT, call.metadata?.getMap() ?? {}, metadataGetter);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: allowedAttributes({ "rpc.system": "grpc", "rpc.service": service, "rpc.method": method }) }, parent);
      let answered = false;
      const reply: Callback = (error, ...rest) => {
        if (answered) return;
        answered = true;
        endSpan(span, error);
        void flush().then(() => callback(error, ...rest));
      };
      try {
        return context.with(trace.setSpan(parent, span), () => handler.call(self, call, reply));
      } catch (error) {
        if (!answered) {
          answered = true;
          endSpan(span, error);
        }
        throw error;
      }
    };
  }

  function endSpan(span: Span, error: unknown): void {
    const raw = error === null || error === undefined ? 0 : (error as { code?: unknown }).code;
    const code = typeof raw === "number" ? raw : 2; // UNKNOWN: an error without a gRPC status
    span.setAttributes(allowedAttributes({ "rpc.grpc.status_code": code }));
    if (code !== 0) {
      span.setAttributes(allowedAttributes({ "error.type": errorType(statusNames.get(code) ?? code) }));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}
