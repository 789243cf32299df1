// The one reader of OTLP/JSON files: one export request per line, as the
// OpenTelemetry Collector's file exporter writes them (testkit/otel-collector.ts)
// and as `pulumi --otel-traces file://...` does (test/observability/otlp-file.ts):
// spans and metric points flattened with their resource, scope and attributes.
import { readFileSync } from "node:fs";
import { z } from "zod";

const anyValue: z.ZodType<AnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.string(), z.number()]).optional(),
    doubleValue: z.union([z.number(), z.string()]).optional(),
    arrayValue: z.object({ values: z.array(anyValue).optional() }).optional(),
    kvlistValue: z.object({ values: z.array(z.object({ key: z.string(), value: anyValue.optional() })).optional() }).optional(),
    bytesValue: z.string().optional(),
  }),
);
interface AnyValue {
  stringValue?: string | undefined;
  boolValue?: boolean | undefined;
  intValue?: string | number | undefined;
  doubleValue?: number | string | undefined;
  arrayValue?: { values?: AnyValue[] | undefined } | undefined;
  kvlistValue?: { values?: Array<{ key: string; value?: AnyValue | undefined }> | undefined } | undefined;
  bytesValue?: string | undefined;
}
const keyValues = z.array(z.object({ key: z.string(), value: anyValue.optional() })).optional();
const scope = z.object({ name: z.string().optional(), version: z.string().optional() }).optional();
const resource = z.object({ attributes: keyValues }).optional();
const nanos = z.union([z.string(), z.number()]);

const tracesLine = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource,
        scopeSpans: z
          .array(
            z.object({
              scope,
              spans: z
                .array(
                  z.object({
                    traceId: z.string(),
                    spanId: z.string(),
                    parentSpanId: z.string().optional(),
                    name: z.string(),
                    kind: z.number().optional(),
                    startTimeUnixNano: nanos,
                    endTimeUnixNano: nanos,
                    attributes: keyValues,
                    status: z.object({ code: z.number().optional(), message: z.string().optional() }).optional(),
                    events: z.array(z.object({ name: z.string() }).loose()).optional(),
                    links: z.array(z.object({ traceId: z.string(), spanId: z.string() }).loose()).optional(),
                  }),
                )
                .optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

const dataPoint = z
  .object({
    attributes: keyValues,
    asInt: z.union([z.string(), z.number()]).optional(),
    asDouble: z.union([z.number(), z.string()]).optional(),
    count: z.union([z.string(), z.number()]).optional(),
    sum: z.number().optional(),
    min: z.number().optional(),
    max: z.number().optional(),
  })
  .loose();
const metricsLine = z.object({
  resourceMetrics: z
    .array(
      z.object({
        resource,
        scopeMetrics: z
          .array(
            z.object({
              scope,
              metrics: z
                .array(
                  z.object({
                    name: z.string(),
                    unit: z.string().optional(),
                    description: z.string().optional(),
                    sum: z.object({ dataPoints: z.array(dataPoint).optional() }).loose().optional(),
                    gauge: z.object({ dataPoints: z.array(dataPoint).optional() }).loose().optional(),
                    histogram: z.object({ dataPoints: z.array(dataPoint).optional() }).loose().optional(),
                  }),
                )
                .optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

export type AttributeValue = string | number | boolean | AttributeValue[] | null;
export type CollectedAttributes = Record<string, AttributeValue>;

/** OTLP's span kinds (1 internal ... 5 consumer), by name. */
export type CollectedSpanKind = "UNSPECIFIED" | "INTERNAL" | "SERVER" | "CLIENT" | "PRODUCER" | "CONSUMER";
const KINDS: readonly CollectedSpanKind[] = ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"];

export interface CollectedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Absent on a trace's root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: CollectedSpanKind;
  /** Milliseconds since the epoch (fractional). */
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: CollectedAttributes;
  /** The resource's `service.name`. */
  readonly service: string | undefined;
  readonly resource: CollectedAttributes;
  /** The instrumentation scope (tracer) name. */
  readonly scope: string | undefined;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly eventNames: readonly string[];
  /** The spans this one links to (e.g. a batch and the calls it serves). */
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>;
}

export interface CollectedMetricPoint {
  readonly name: string;
  readonly unit: string | undefined;
  readonly type: "sum" | "gauge" | "histogram";
  readonly service: string | undefined;
  readonly scope: string | undefined;
  readonly attributes: CollectedAttributes;
  /** A sum's or gauge's value; a histogram's sum. */
  readonly value: number;
  /** A histogram's count. */
  readonly count: number | undefined;
}

function value(v: AnyValue | undefined): AttributeValue {
  if (v === undefined) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(value);
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.kvlistValue !== undefined) return JSON.stringify(attributes(v.kvlistValue.values));
  return null;
}

function attributes(list: Array<{ key: string; value?: AnyValue | undefined }> | undefined): CollectedAttributes {
  const out: CollectedAttributes = {};
  for (const { key, value: v } of list ?? []) out[key] = value(v);
  return out;
}

const ms = (n: string | number): number => Number(BigInt(n) / 1000n) / 1000;

/** The JSON lines of a file the collector's file exporter writes (a last line still being written is skipped). */
function lines(file: string): unknown[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const out: unknown[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a partial last line: read again later
    }
  }
  return out;
}

/** Every span in a file of OTLP/JSON trace export requests. */
export function readSpans(file: string): CollectedSpan[] {
  const spans: CollectedSpan[] = [];
  for (const line of lines(file)) {
    for (const rs of tracesLine.parse(line).resourceSpans ?? []) {
      const res = attributes(rs.resource?.attributes);
      const service = typeof res["service.name"] === "string" ? res["service.name"] : undefined;
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ? s.parentSpanId : undefined,
            name: s.name,
            kind: KINDS[s.kind ?? 0] ?? "UNSPECIFIED",
            startMs: ms(s.startTimeUnixNano),
            endMs: ms(s.endTimeUnixNano),
            attributes: attributes(s.attributes),
            service,
            resource: res,
            scope: ss.scope?.name,
            statusCode: s.status?.code ?? 0,
            eventNames: (s.events ?? []).map((e) => e.name),
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          });
        }
      }
    }
  }
  return spans;
}

/** Every data point in a file of OTLP/JSON metric export requests (in export order). */
export function readMetrics(file: string): CollectedMetricPoint[] {
  const points: CollectedMetricPoint[] = [];
  for (const line of lines(file)) {
    for (const rm of metricsLine.parse(line).resourceMetrics ?? []) {
      const res = attributes(rm.resource?.attributes);
      const service = typeof res["service.name"] === "string" ? res["service.name"] : undefined;
      for (const sm of rm.scopeMetrics ?? []) {
        for (const m of sm.metrics ?? []) {
          const [type, data] = m.histogram ? (["histogram", m.histogram] as const) : m.sum ? (["sum", m.sum] as const) : m.gauge ? (["gauge", m.gauge] as const) : [undefined, undefined];
          if (!type) continue;
          for (const p of data.dataPoints ?? []) {
            const v = type === "histogram" ? (p.sum ?? 0) : Number(p.asDouble ?? p.asInt ?? 0);
            points.push({
              name: m.name,
              unit: m.unit,
              type,
              service,
              scope: sm.scope?.name,
              attributes: attributes(p.attributes),
              value: v,
              count: p.count !== undefined ? Number(p.count) : undefined,
            });
          }
        }
      }
    }
  }
  return points;
}

