// A small line chart written as SVG text: enough for "time against N, ours and
// the floor" in docs/, without a plotting dependency. The x axis is log-scale
// (N grows 10x per step), the y axis linear from zero so ratios look like ratios.

export interface Series {
  readonly name: string;
  readonly color: string;
  /** [x, y] pairs; x > 0. */
  readonly points: ReadonlyArray<readonly [number, number]>;
  readonly dashed?: boolean;
}

export interface ChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly width?: number;
  readonly height?: number;
}

const MARGIN = { left: 64, right: 150, top: 36, bottom: 48 };

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** A "nice" step (1, 2 or 5 times a power of ten) giving about `count` ticks up to `max`. */
export function niceStep(max: number, count = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

function formatTick(value: number): string {
  if (value === 0) return "0";
  if (Math.abs(value) >= 100) return value.toFixed(0);
  return Number(value.toPrecision(3)).toString();
}

export function lineChart(spec: ChartSpec): string {
  const width = spec.width ?? 640;
  const height = spec.height ?? 360;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const xs = spec.series.flatMap((s) => s.points.map(([x]) => x)).filter((x) => x > 0);
  const ys = spec.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
  if (xs.length === 0) throw new Error("lineChart: no points");
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const step = niceStep(Math.max(...ys, 0));
  const yMax = Math.max(step, Math.ceil(Math.max(...ys, 0) / step) * step);
  const logMin = Math.log10(xMin);
  const logSpan = Math.log10(xMax) - logMin || 1;
  const px = (x: number): number => MARGIN.left + ((Math.log10(x) - logMin) / logSpan) * plotW;
  const py = (y: number): number => MARGIN.top + plotH - (y / yMax) * plotH;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="22" font-size="14" font-weight="bold">${escapeXml(spec.title)}</text>`,
  );
  // Horizontal grid and y ticks.
  for (let y = 0; y <= yMax + step / 2; y += step) {
    const yy = py(y).toFixed(1);
    out.push(`<line x1="${MARGIN.left}" y1="${yy}" x2="${MARGIN.left + plotW}" y2="${yy}" stroke="#ddd"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${formatTick(y)}</text>`);
  }
  // One x tick per distinct x (the measured N), log-placed.
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    const xx = px(x).toFixed(1);
    out.push(`<line x1="${xx}" y1="${MARGIN.top}" x2="${xx}" y2="${MARGIN.top + plotH}" stroke="#eee"/>`);
    out.push(`<text x="${xx}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${formatTick(x)}</text>`);
  }
  out.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`,
  );
  spec.series.forEach((series, index) => {
    const points = series.points.filter(([x, y]) => x > 0 && Number.isFinite(y));
    const path = points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ");
    const dash = series.dashed === true ? ` stroke-dasharray="6 4"` : "";
    out.push(`<polyline points="${path}" fill="none" stroke="${series.color}" stroke-width="2"${dash}/>`);
    for (const [x, y] of points) {
      out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${series.color}"/>`);
    }
    const ly = MARGIN.top + 8 + index * 20;
    const lx = MARGIN.left + plotW + 14;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 22}" y2="${ly}" stroke="${series.color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${lx + 28}" y="${ly}" dominant-baseline="middle">${escapeXml(series.name)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
