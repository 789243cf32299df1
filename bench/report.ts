// Turns the benchmark results into Markdown tables and SVG charts (docs/).
import type { ClientComparison } from "./client-vs-undici.js";
import { type EngineRun, type Operation, OPERATIONS } from "./engine-vs-floor.js";
import { rps, type ServerComparison } from "./fake-server.js";
import type { FloorKind } from "./inline-floors.js";
import { lineChart } from "./svg-chart.js";

export interface Machine {
  readonly date: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly pulumi: string;
  readonly pulumiSdk: string;
  /** 1-minute load average before and after each part. */
  readonly load: Record<string, readonly [number, number]>;
}

export interface BenchResults {
  readonly mode: "quick" | "full";
  readonly skipCheckpoints: boolean;
  readonly machine: Machine;
  readonly servers?: ServerComparison;
  readonly client?: ClientComparison;
  readonly engine?: readonly EngineRun[];
}

/** Goals the issue sets; the report marks each figure against its goal. */
export const GOALS = { serverRatio: 0.9, clientRatio: 0.9, engineRatio: 1.1, stateBytes: 2048 } as const;

const fixed = (value: number | undefined, digits = 2): string => (value === undefined || !Number.isFinite(value) ? "–" : value.toFixed(digits));
const mark = (ok: boolean): string => (ok ? "✓" : "✗");

function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

export function serversTable(s: ServerComparison): string {
  return table(
    ["server", "req/s", "p50 ms", "p99 ms", "server µs/req", "errors"],
    [
      ["bare node:http", fixed(rps(s.bare), 0), fixed(s.bare.p50), fixed(s.bare.p99), fixed(s.bare.serverUsPerRequest, 1), String(s.bare.errors)],
      ["fake server", fixed(rps(s.fake), 0), fixed(s.fake.p50), fixed(s.fake.p99), fixed(s.fake.serverUsPerRequest, 1), String(s.fake.errors)],
    ],
  ) +
    `\n\nThroughput fake/bare: **${fixed(s.throughputRatio)}x** (goal >= ${GOALS.serverRatio}x ${mark(s.throughputRatio >= GOALS.serverRatio)}), ${s.rounds === 1 ? "one round" : `the median of ${s.rounds} rounds`}; ` +
    `every round: ${s.roundRatios.map((r) => fixed(r)).join(", ")}. Server cost per request bare/fake: ${fixed(s.costRatio)}x.`;
}

export function clientTable(c: ClientComparison): string {
  return table(
    ["client", "req/s", "p50 ms", "p99 ms", "client µs/req", "errors"],
    [
      ["raw undici.request", fixed(c.raw.rps, 0), fixed(c.raw.p50), fixed(c.raw.p99), fixed(c.raw.clientUsPerRequest, 1), String(c.raw.errors)],
      ["UserGroupsClient.getOrCreate", fixed(c.ours.rps, 0), fixed(c.ours.p50), fixed(c.ours.p99), fixed(c.ours.clientUsPerRequest, 1), String(c.ours.errors)],
    ],
  ) + `\n\nThroughput ours/raw: **${fixed(c.ratio)}x** (goal >= ${GOALS.clientRatio}x ${mark(c.ratio >= GOALS.clientRatio)}); client cost per request raw/ours: ${fixed(c.costRatio)}x.`;
}

interface Measured {
  readonly n: number;
  readonly ours: EngineRun;
  readonly floor: EngineRun;
  /** The floor of a UserGroup's shape: same outputs, secret token (absent in results from before it was measured). */
  readonly floorShaped?: EngineRun;
}

function pairs(runs: readonly EngineRun[]): Measured[] {
  const ns = [...new Set(runs.map((r) => r.n))].sort((a, b) => a - b);
  return ns.flatMap((n) => {
    const ours = runs.find((r) => r.n === n && r.kind === "ours");
    const floor = runs.find((r) => r.n === n && r.kind === "floor");
    const floorShaped = runs.find((r) => r.n === n && r.kind === "floor-shaped");
    return ours && floor ? [{ n, ours, floor, ...(floorShaped ? { floorShaped } : {}) }] : [];
  });
}

/** Which floor a table compares against (declared with the floors themselves: inline-floors.ts). */
export type { FloorKind };

/**
 * Wall time, ratio and time per resource of each operation at each N, against
 * one floor: the plain no-op floor (default) or the one of a UserGroup's
 * shape. Empty when that floor was not measured.
 */
export function engineTable(runs: readonly EngineRun[], against: FloorKind = "floor"): string {
  const rows: string[][] = [];
  for (const operation of OPERATIONS) {
    let previous: { n: number; ours: number; floor: number } | undefined;
    for (const measured of pairs(runs)) {
      const { n, ours } = measured;
      const floor = against === "floor" ? measured.floor : measured.floorShaped;
      if (floor === undefined) continue;
      const o = ours.seconds[operation];
      const f = floor.seconds[operation];
      const ratio = o / f;
      // Marginal cost: what each extra resource added since the previous N (flat = linear).
      const marginal = previous ? ((o - previous.ours) / (n - previous.n)) * 1000 : NaN;
      const marginalFloor = previous ? ((f - previous.floor) / (n - previous.n)) * 1000 : NaN;
      rows.push([
        operation,
        String(n),
        fixed(f),
        fixed(o),
        `${fixed(ratio)} ${mark(ratio <= GOALS.engineRatio)}`,
        fixed((f / n) * 1000, 1),
        fixed((o / n) * 1000, 1),
        fixed(marginalFloor, 1),
        fixed(marginal, 1),
        // What our provider adds on top of the engine, per resource: flat = no N-dependent step of ours.
        fixed(((o - f) / n) * 1000, 1),
      ]);
      previous = { n, ours: o, floor: f };
    }
  }
  if (rows.length === 0) return "";
  return table(
    ["operation", "N", "floor s", "ours s", "ours/floor", "floor ms/res", "ours ms/res", "floor marginal ms/res", "ours marginal ms/res", "(ours−floor) ms/res"],
    rows,
  );
}

/** A median wall time with the fastest and slowest repetition, e.g. "2.90 (2.85–3.53)". */
function timeWithRange(run: EngineRun | undefined, operation: Operation): string {
  if (run === undefined) return "–";
  const range = run.secondsRange?.[operation];
  return range === undefined ? fixed(run.seconds[operation]) : `${fixed(run.seconds[operation])} (${fixed(range[0])}–${fixed(range[1])})`;
}

/** Ours against both floors side by side: wall times (median, and range over the repetitions) and the two ratios. */
export function ratioTable(runs: readonly EngineRun[]): string {
  const rows: string[][] = [];
  for (const operation of OPERATIONS) {
    for (const { n, ours, floor, floorShaped } of pairs(runs)) {
      const o = ours.seconds[operation];
      const f = floor.seconds[operation];
      const fs = floorShaped?.seconds[operation];
      const ratio = o / f;
      const ratioShaped = fs === undefined ? undefined : o / fs;
      rows.push([
        operation,
        String(n),
        timeWithRange(floor, operation),
        timeWithRange(floorShaped, operation),
        timeWithRange(ours, operation),
        `${fixed(ratio)} ${mark(ratio <= GOALS.engineRatio)}`,
        ratioShaped === undefined ? "–" : `${fixed(ratioShaped)} ${mark(ratioShaped <= GOALS.engineRatio)}`,
      ]);
    }
  }
  return table(["operation", "N", "floor s", "shaped floor s", "ours s", "ours/floor", "ours/shaped floor"], rows);
}

/** CPU seconds per process at the largest N: which process the extra time (if any) is spent in. */
export function cpuTable(runs: readonly EngineRun[]): string {
  const paired = pairs(runs);
  const last = paired.at(-1);
  if (last === undefined) return "";
  const rows = OPERATIONS.map((operation) => {
    const f = last.floor.cpuSeconds[operation];
    const s = last.floorShaped?.cpuSeconds[operation];
    const o = last.ours.cpuSeconds[operation];
    return [
      operation,
      fixed(f.engine, 1), fixed(s?.engine, 1), fixed(o.engine, 1),
      fixed(f.provider, 1), fixed(s?.provider, 1), fixed(o.provider, 1),
      fixed(f.program, 1), fixed(s?.program, 1), fixed(o.program, 1),
    ];
  });
  return (
    `CPU seconds at N = ${last.n} (engine = the \`pulumi\` CLI, provider = the dynamic-provider process, program = the program's Node process; for ours the fake server runs in the benchmark process and is not counted):\n\n` +
    table(
      [
        "operation",
        "floor engine", "shaped floor engine", "ours engine",
        "floor provider", "shaped floor provider", "ours provider",
        "floor program", "shaped floor program", "ours program",
      ],
      rows,
    )
  );
}

export function resourceTable(runs: readonly EngineRun[]): string {
  const mib = (bytes: number | undefined): string => (bytes === undefined ? "–" : (bytes / 1024 / 1024).toFixed(0));
  return table(
    [
      "N",
      "floor state B/res", "shaped floor state B/res", "ours state B/res",
      "floor provider peak MiB", "shaped floor provider peak MiB", "ours provider peak MiB",
      "ours requests/res (up)", "ours requests/res (destroy)",
    ],
    pairs(runs).map(({ n, ours, floor, floorShaped }) => [
      String(n),
      fixed(floor.stateBytesPerResource, 0),
      fixed(floorShaped?.stateBytesPerResource, 0),
      `${fixed(ours.stateBytesPerResource, 0)} ${mark(ours.stateBytesPerResource <= GOALS.stateBytes)}`,
      mib(floor.providerPeakBytes),
      mib(floorShaped?.providerPeakBytes),
      mib(ours.providerPeakBytes),
      requestsText(ours.requestsPerResource?.up),
      requestsText(ours.requestsPerResource?.destroy),
    ]),
  );
}

function requestsText(counts: Record<string, number> | undefined): string {
  if (counts === undefined) return "–";
  const parts = Object.entries(counts).map(([method, count]) => `${method} ${fixed(count, 3)}`);
  return parts.length > 0 ? parts.join(", ") : "none";
}

export function machineText(m: Machine): string {
  const load = Object.entries(m.load)
    .map(([part, [before, after]]) => `${part} ${before.toFixed(1)} → ${after.toFixed(1)}`)
    .join("; ");
  return [
    `- date: ${m.date}`,
    `- CPU: ${m.cpus} × ${m.cpuModel}; memory ${m.memoryGiB.toFixed(1)} GiB`,
    `- Node ${m.node}; Pulumi engine ${m.pulumi}; @pulumi/pulumi ${m.pulumiSdk}`,
    `- 1-minute load average before → after each part: ${load}`,
  ].join("\n");
}

export function markdownReport(results: BenchResults): string {
  const variant = results.skipCheckpoints ? ", PULUMI_SKIP_CHECKPOINTS=true" : "";
  const parts = [`# Benchmark results (${results.mode} mode${variant})`, "", "Generated by `npm run bench`; see docs/performance.md for the method.", "", machineText(results.machine)];
  if (results.servers) parts.push("", "## Fake server vs bare node:http", "", serversTable(results.servers));
  if (results.client) parts.push("", "## UserGroupsClient vs raw undici.request", "", clientTable(results.client));
  if (results.engine) {
    parts.push("", "## Pulumi operations: N UserGroups vs N no-op dynamic resources", "");
    parts.push(
      "Two floors: `floor` is a no-op dynamic resource with the same inputs; `shaped floor` is a no-op dynamic resource of",
      "a UserGroup's shape: the same inputs and output properties, the 64-character `token` declared secret.",
      "",
      ratioTable(results.engine),
    );
    parts.push("", "### Against the no-op floor", "", engineTable(results.engine, "floor"));
    const shapedTable = engineTable(results.engine, "floor-shaped");
    if (shapedTable !== "") parts.push("", "### Against the no-op floor of a UserGroup's shape", "", shapedTable);
    parts.push("", cpuTable(results.engine));
    parts.push("", "## State size and dynamic-provider memory", "", resourceTable(results.engine));
  }
  return `${parts.join("\n")}\n`;
}

const TITLES: Record<Operation, string> = {
  preview: "pulumi preview (N creates planned)",
  up: "pulumi up (N creates)",
  "preview-unchanged": "pulumi preview (N unchanged)",
  destroy: "pulumi destroy (N deletes)",
};

/** One chart per operation: seconds against N, ours and the two floors. File name -> SVG text. */
export function engineCharts(runs: readonly EngineRun[]): Map<string, string> {
  const charts = new Map<string, string>();
  const paired = pairs(runs);
  for (const operation of OPERATIONS) {
    charts.set(
      `perf-${operation}.svg`,
      lineChart({
        title: TITLES[operation],
        xLabel: "N resources (log scale)",
        yLabel: "wall time, s",
        series: [
          { name: "UserGroup", color: "#d62728", points: paired.map(({ n, ours }) => [n, ours.seconds[operation]] as const) },
          { name: "no-op floor", color: "#1f77b4", dashed: true, points: paired.map(({ n, floor }) => [n, floor.seconds[operation]] as const) },
          ...(paired.some((p) => p.floorShaped !== undefined)
            ? [{
                name: "shaped floor",
                color: "#2ca02c",
                dashed: true,
                points: paired.flatMap(({ n, floorShaped }) => (floorShaped ? [[n, floorShaped.seconds[operation]] as const] : [])),
              }]
            : []),
        ],
      }),
    );
  }
  return charts;
}
