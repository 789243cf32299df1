// What `pulumi --otel-traces file://...` writes (one OTLP JSON export request per
// line, otelreceiver/file_exporter.go), read by the one OTLP/JSON reader
// (testkit/otlp-json.ts): its spans with their service, kind as OTLP numbers it,
// and the walk up a span's parents.
import { existsSync } from "node:fs";
import { type CollectedAttributes, readSpans } from "../../testkit/otlp-json";

export interface TraceSpan {
  readonly service: string;
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<CollectedAttributes>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
const KIND_NUMBERS = { UNSPECIFIED: 0, INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export function readTraceFile(file: string): TraceSpan[] {
  if (!existsSync(file)) throw new Error(`no trace file at ${file}`);
  return readSpans(file).map((span) => ({
    service: span.service ?? "",
    name: span.name,
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId ?? "",
    kind: KIND_NUMBERS[span.kind],
    attributes: span.attributes,
  }));
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
