// A real OpenTelemetry SDK for the telemetry tests: spans and metrics kept in
// memory, W3C propagation, async-context (what an application registers).
import { context, metrics, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AggregationTemporality, MeterProvider, MetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

export interface TestSdk {
  readonly spans: InMemorySpanExporter;
  metrics(): Promise<ResourceMetrics>;
  shutdown(): Promise<void>;
}

export function registerTestSdk(): TestSdk {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans,
    metrics: async () => (await reader.collect()).resourceMetrics,
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** Everything a span exports, as plain data (for searching). */
export function spanData(span: ReadableSpan): object {
  return {
    name: span.name,
    kind: span.kind,
    spanContext: span.spanContext(),
    parent: span.parentSpanContext,
    attributes: span.attributes,
    status: span.status,
    events: span.events,
    links: span.links,
    resource: span.resource.attributes,
    scope: span.instrumentationScope,
  };
}
