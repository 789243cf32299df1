// Reading what `pulumi --otel-traces file://...` writes: one OTLP JSON
// ExportTraceServiceRequest per line (otelreceiver/file_exporter.go), its spans
// flattened with their service and attributes, and the walk up a span's parents.
import { readFileSync } from "node:fs";

export interface TraceSpan {
  readonly service: string;
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpLine {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: { spans?: { name: string; traceId: string; spanId: string; parentSpanId?: string; kind?: number; attributes?: OtlpAttribute[] }[] }[];
  }[];
}

function valueOf(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? "";
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]));
}

export function readTraceFile(file: string): TraceSpan[] {
  const spans: TraceSpan[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    const parsed = JSON.parse(line) as OtlpLine;
    for (const resourceSpans of parsed.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          spans.push({
            service,
            name: span.name,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? "",
            kind: span.kind ?? 0,
            attributes: attributesOf(span.attributes),
          });
        }
      }
    }
  }
  return spans;
}

/** The span's parent, grandparent, ... up to the root (as far as the file has them). */
export function ancestors(spans: readonly TraceSpan[], span: TraceSpan): TraceSpan[] {
  const byId = new Map(spans.map((each) => [each.spanId, each]));
  const chain: TraceSpan[] = [];
  for (let parent = byId.get(span.parentSpanId); parent !== undefined; parent = byId.get(parent.parentSpanId)) chain.push(parent);
  return chain;
}

export function childrenOf(spans: readonly TraceSpan[], span: TraceSpan): TraceSpan[] {
  return spans.filter((each) => each.parentSpanId === span.spanId && each.traceId === span.traceId);
}

/** `service:name` of each span, for readable failures. */
export function described(spans: readonly TraceSpan[]): string[] {
  return spans.map((span) => `${span.service}:${span.name}`);
}
