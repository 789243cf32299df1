// A collected trace (otel-collector.ts) drawn as an SVG waterfall, for
// docs/observability.md (scripts/trace-picture.ts): one row per span, its name
// indented by depth, a bar from its start for its duration on a common time axis,
// coloured by the process (service.name) that recorded it, a failed span marked.
// Only span names, services and times are drawn: no attribute value, so nothing an
// attribute could hold (an id, a path) reaches the picture; a caller that wants a
// name shown differently passes `label`.
import { type CollectedSpan, flatten, type SpanNode, spanTree } from "./otel-collector";

export interface WaterfallOptions {
  readonly title: string;
  /** A line under the title. */
  readonly subtitle?: string;
  /**
   * Which spans to draw; a span left out hands its children to its nearest drawn
   * ancestor (so the engine's storage spans can be left out of a picture of the request path).
   */
  readonly keep?: (span: CollectedSpan) => boolean;
  /** The text of a span's row (default its name). */
  readonly label?: (span: CollectedSpan) => string;
  /**
   * A short note after a span's duration (e.g. a time waited, a retry number): only numbers
   * the caller picks from attributes that never hold a secret.
   */
  readonly note?: (span: CollectedSpan) => string | undefined;
  /** Milliseconds the span waited just before it started (drawn as a pale bar ending at its start). */
  readonly waitedBeforeMs?: (span: CollectedSpan) => number | undefined;
  /** Width of the picture in pixels (default 1100). */
  readonly width?: number;
}

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759", "#bab0ac", "#ff9da7"];
const ROW = 18;
/** The width of a character of the 11 px monospace font, about. */
const CHAR = 6.6;
const FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The spans kept, each given its nearest kept ancestor as its parent. */
export function pruneSpans(spans: readonly CollectedSpan[], keep: (span: CollectedSpan) => boolean): CollectedSpan[] {
  const byId = new Map(spans.map((s) => [`${s.traceId}/${s.spanId}`, s]));
  return spans.filter(keep).map((s) => {
    let parent = s.parentSpanId ? byId.get(`${s.traceId}/${s.parentSpanId}`) : undefined;
    while (parent && !keep(parent)) parent = parent.parentSpanId ? byId.get(`${parent.traceId}/${parent.parentSpanId}`) : undefined;
    return { ...s, parentSpanId: parent?.spanId };
  });
}

/** A step of 1, 2 or 5 times a power of ten giving about `count` ticks over `total`. */
function tickStep(total: number, count: number): number {
  const raw = total / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? raw;
}

function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
  if (ms >= 10) return `${ms.toFixed(0)} ms`;
  return `${ms.toFixed(1)} ms`;
}

/** The waterfall of `spans` (one trace) as an SVG document. */
export function renderWaterfallSvg(spans: readonly CollectedSpan[], options: WaterfallOptions): string {
  const drawn = options.keep ? pruneSpans(spans, options.keep) : [...spans];
  if (drawn.length === 0) throw new Error("no span to draw");
  const rows: SpanNode[] = flatten(spanTree(drawn));
  const label = options.label ?? ((s: CollectedSpan) => s.name);
  const width = options.width ?? 1100;
  const t0 = Math.min(...drawn.map((s) => s.startMs));
  const t1 = Math.max(...drawn.map((s) => s.endMs));
  const total = Math.max(t1 - t0, 1);

  const services = [...new Set(rows.map((r) => r.span.service ?? "(unknown)"))];
  const colour = (service: string | undefined) => PALETTE[services.indexOf(service ?? "(unknown)") % PALETTE.length]!;

  const labelWidth = Math.min(520, Math.max(260, ...rows.map((r) => 14 + r.depth * 12 + label(r.span).length * CHAR)));
  const left = labelWidth + 10;
  const right = width - 70;
  const x = (ms: number) => left + ((ms - t0) / total) * (right - left);
  const top = options.subtitle ? 64 : 48;
  const axisY = top;
  const firstRow = axisY + 14;
  const legendY = firstRow + rows.length * ROW + 18;
  const height = legendY + 22;

  const out: string[] = [];
  let widest = width;
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT}" font-size="11">`);
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="10" y="22" font-size="15" font-weight="bold" fill="#222">${escape(options.title)}</text>`);
  if (options.subtitle) out.push(`<text x="10" y="42" font-size="11" fill="#555">${escape(options.subtitle)}</text>`);

  // The time axis: ticks and grid lines.
  const step = tickStep(total, 8);
  for (let t = 0; t <= total + 1e-9; t += step) {
    const tx = x(t0 + t).toFixed(1);
    out.push(`<line x1="${tx}" y1="${axisY + 4}" x2="${tx}" y2="${legendY - 10}" stroke="#e6e6e6"/>`);
    out.push(`<text x="${tx}" y="${axisY}" text-anchor="middle" fill="#666">${escape(formatMs(t))}</text>`);
  }

  rows.forEach(({ span, depth }, i) => {
    const y = firstRow + i * ROW;
    if (i % 2 === 1) out.push(`<rect x="0" y="${y}" width="${width}" height="${ROW}" fill="#f7f7f7" opacity="0.6"/>`);
    const fill = colour(span.service);
    const text = label(span);
    out.push(`<rect x="${8 + depth * 12}" y="${y + 5}" width="8" height="8" fill="${fill}"/>`);
    out.push(`<text x="${20 + depth * 12}" y="${y + 13}" fill="#222">${escape(text)}</text>`);
    const bx = x(span.startMs);
    const bw = Math.max(1.5, x(span.endMs) - bx);
    const failed = span.statusCode === 2;
    out.push(
      `<rect x="${bx.toFixed(1)}" y="${y + 3}" width="${bw.toFixed(1)}" height="${ROW - 6}" rx="2" fill="${fill}"${failed ? ` stroke="#c0392b" stroke-width="1.5"` : ""}><title>${escape(`${text} (${span.service ?? "?"}, ${span.kind.toLowerCase()}): ${formatMs(span.endMs - span.startMs)}${failed ? ", failed" : ""}`)}</title></rect>`,
    );
    const waited = options.waitedBeforeMs?.(span);
    let wx = bx;
    if (waited !== undefined && waited > 0) {
      wx = x(Math.max(t0, span.startMs - waited));
      out.push(`<rect x="${wx.toFixed(1)}" y="${y + 6}" width="${Math.max(1, bx - wx).toFixed(1)}" height="${ROW - 12}" fill="${fill}" opacity="0.3"/>`);
    }
    const note = options.note?.(span);
    const duration = `${formatMs(span.endMs - span.startMs)}${failed ? " ✗" : ""}${note ? `  ${note}` : ""}`;
    // After the bar when it fits; else inside it (white) when the bar is wide enough; else before it when
    // that clears the names; else after it all the same, the picture made wider.
    const textWidth = duration.length * CHAR;
    const colourOf = failed ? "#c0392b" : "#444";
    const after = bx + bw + 4;
    if (after + textWidth < right + 66) {
      out.push(`<text x="${after.toFixed(1)}" y="${y + 13}" fill="${colourOf}">${escape(duration)}</text>`);
    } else if (bw > textWidth + 8) {
      out.push(`<text x="${(bx + 4).toFixed(1)}" y="${y + 13}" fill="#fff">${escape(duration)}</text>`);
    } else if (wx - 4 - textWidth > left) {
      out.push(`<text x="${(wx - 4).toFixed(1)}" y="${y + 13}" text-anchor="end" fill="${colourOf}">${escape(duration)}</text>`);
    } else {
      out.push(`<text x="${after.toFixed(1)}" y="${y + 13}" fill="${colourOf}">${escape(duration)}</text>`);
      widest = Math.max(widest, after + textWidth + 8);
    }
  });

  // The legend: one swatch per process.
  let lx = 10;
  for (const service of services) {
    out.push(`<rect x="${lx}" y="${legendY}" width="10" height="10" fill="${colour(service)}"/>`);
    out.push(`<text x="${lx + 14}" y="${legendY + 9}" fill="#333">${escape(service)}</text>`);
    lx += 14 + service.length * CHAR + 18;
  }
  if (options.waitedBeforeMs && rows.some((r) => (options.waitedBeforeMs!(r.span) ?? 0) > 0)) {
    out.push(`<rect x="${lx}" y="${legendY + 3}" width="14" height="5" fill="#888" opacity="0.4"/>`);
    out.push(`<text x="${lx + 18}" y="${legendY + 9}" fill="#333">waiting before it</text>`);
    lx += 18 + 17 * CHAR + 18;
  }
  if (rows.some((r) => r.span.statusCode === 2)) {
    out.push(`<rect x="${lx}" y="${legendY}" width="10" height="10" fill="none" stroke="#c0392b" stroke-width="1.5"/>`);
    out.push(`<text x="${lx + 14}" y="${legendY + 9}" fill="#333">failed (✗)</text>`);
  }
  out.push("</svg>");
  // Made wider when a note ran past the right edge.
  const w = Math.ceil(widest);
  out[0] = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${height}" viewBox="0 0 ${w} ${height}" font-family="${FONT}" font-size="11">`;
  out[1] = `<rect width="${w}" height="${height}" fill="#ffffff"/>`;
  return `${out.join("\n")}\n`;
}
