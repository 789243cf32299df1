// The scale benchmark's Markdown and chart (bench/scale.ts), each figure against
// the goal issue 24 sets for it.
import { type CliRun, type FleetScaleRun, type ScaleKind, type ScaleOperation, SCALE_OPERATIONS, type ScaleResults } from "./scale.js";
import { PREVIEW_ENGINE_ENV } from "../provider/automation/internal.js";
import { median } from "./stats.js";
import { lineChart } from "./svg-chart.js";

/**
 * Goals of issue 24: an up of 10x the groups in at most 10x the time (linear: the time
 * ratio at most the ratio of the N), an unchanged preview of 10,000 under a minute, one
 * new group's ensure in a fleet of N within 1.5x of one in a fleet of 300.
 */
export const SCALE_GOALS = { growthVsN: 1, previewUnchangedSeconds: 60, previewUnchangedAtN: 10_000, ensureVsBaseline: 1.5, vsShapedFloor: 2 } as const;

export interface GrowthRow {
  readonly n: number;
  readonly seconds: number;
  /** seconds / n, in ms. */
  readonly msPerGroup: number;
  /** (seconds - previous seconds) / (n - previous n), in ms; undefined for the first row. */
  readonly marginalMsPerGroup?: number;
  /** seconds / the first row's seconds, and n / the first row's n (equal when the cost is linear with no fixed part). */
  readonly ratio: number;
  readonly nRatio: number;
}

/** Time against N, by ascending N: per-group and marginal cost, growth from the smallest N. */
export function growth(points: ReadonlyArray<readonly [number, number]>): GrowthRow[] {
  const sorted = [...points].sort(([a], [b]) => a - b);
  const first = sorted[0];
  if (first === undefined) return [];
  return sorted.map(([n, seconds], index) => {
    const previous = index > 0 ? sorted[index - 1] : undefined;
    return {
      n,
      seconds,
      msPerGroup: (seconds / n) * 1000,
      ...(previous !== undefined ? { marginalMsPerGroup: ((seconds - previous[1]) / (n - previous[0])) * 1000 } : {}),
      ratio: seconds / first[1],
      nRatio: n / first[0],
    };
  });
}

/** Linear or better: the time grew at most as much as N did (times the goal's slack). */
export function withinGrowth(row: GrowthRow): boolean {
  return row.ratio <= row.nRatio * SCALE_GOALS.growthVsN;
}

const fixed = (value: number | undefined, digits = 2): string => (value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : "–");
const mark = (ok: boolean): string => (ok ? "✓" : "✗");
const mib = (bytes: number | undefined): string => (bytes === undefined ? "–" : (bytes / 1024 ** 2).toFixed(0));
const range = (values: readonly number[]): string => (values.length > 1 ? ` (${fixed(Math.min(...values))}–${fixed(Math.max(...values))})` : "");

function runOf(results: ScaleResults, kind: ScaleKind, n: number): CliRun | undefined {
  return results.cli.find((r) => r.kind === kind && r.n === n);
}

function seriesOf(results: ScaleResults, kind: ScaleKind, operation: ScaleOperation): Array<readonly [number, number]> {
  return results.cli.filter((r) => r.kind === kind).map((r) => [r.n, r.operations[operation].seconds] as const);
}

const OPERATION_TITLES: Record<ScaleOperation, string> = {
  up: "up of N new groups",
  "preview-unchanged": "preview, nothing changed",
  drift: "drift (floors: preview --refresh)",
  destroy: "destroy",
};

/** The engine's own unchanged preview of ours (runs that measured it). */
function previewEngineSeries(results: ScaleResults): Array<readonly [number, number]> {
  return results.cli.filter((r) => r.kind === "ours" && r.previewEngine !== undefined).map((r) => [r.n, r.previewEngine!.seconds] as const);
}

function cliTable(results: ScaleResults): string[] {
  const rows: string[] = [];
  const rowsOf = (title: string, operation: ScaleOperation, series: Array<readonly [number, number]>, goal: boolean) => {
    for (const row of growth(series)) {
      const floor = runOf(results, "floor", row.n)?.operations[operation].seconds;
      const shaped = runOf(results, "floor-shaped", row.n)?.operations[operation].seconds;
      const growthMark = row.nRatio > 1 && operation === "up" ? ` ${mark(withinGrowth(row))}` : "";
      const previewMark = goal && operation === "preview-unchanged" && row.n >= SCALE_GOALS.previewUnchangedAtN ? ` ${mark(row.seconds < SCALE_GOALS.previewUnchangedSeconds)}` : "";
      rows.push(
        `| ${title} | ${row.n} | ${fixed(row.seconds, 1)}${previewMark} | ${fixed(row.msPerGroup, 1)} | ${fixed(row.marginalMsPerGroup, 1)} | ` +
          `${row.nRatio > 1 ? `**${fixed(row.ratio)}x** for ${fixed(row.nRatio, 0)}x N${growthMark}` : "–"} | ${fixed(floor, 1)} | ${fixed(shaped, 1)} | ` +
          `${fixed(floor !== undefined ? row.seconds / floor : undefined)}x | **${fixed(shaped !== undefined ? row.seconds / shaped : undefined)}x**${goal && shaped !== undefined ? ` ${mark(row.seconds / shaped <= SCALE_GOALS.vsShapedFloor)}` : ""} |`,
      );
    }
  };
  for (const operation of SCALE_OPERATIONS) {
    rowsOf(OPERATION_TITLES[operation], operation, seriesOf(results, "ours", operation), true);
    if (operation === "preview-unchanged") rowsOf(`${OPERATION_TITLES[operation]}, engine run for every shard (${PREVIEW_ENGINE_ENV}=always)`, operation, previewEngineSeries(results), false);
  }
  return [
    "| operation | N | ours, s | ms per group | marginal ms per group | growth from the smallest N | floor, s | shaped floor, s | ours / floor | ours / shaped floor |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
}

function floorGrowthTable(results: ScaleResults): string[] {
  const rows: string[] = [];
  for (const kind of ["floor", "floor-shaped"] as const) {
    for (const operation of SCALE_OPERATIONS) {
      const rowsOf = growth(seriesOf(results, kind, operation));
      const last = rowsOf.at(-1);
      if (last === undefined || last.nRatio === 1) continue;
      rows.push(`| ${kind === "floor" ? "floor" : "shaped floor"} | ${OPERATION_TITLES[operation]} | ${rowsOf.map((r) => fixed(r.msPerGroup, 1)).join(" / ")} | ${fixed(last.ratio)}x for ${fixed(last.nRatio, 0)}x N |`);
    }
  }
  if (rows.length === 0) return [];
  return ["", `The floors' own growth (ms per group at N = ${results.ns.join(" / ")}):`, "", "| floor | operation | ms per group | growth |", "| --- | --- | --- | --- |", ...rows];
}

function memoryTable(results: ScaleResults): string[] {
  const rows = results.cli.map((run) => {
    const up = run.operations.up;
    const peak = (of: (op: CliRun["operations"][ScaleOperation]) => number | undefined): number | undefined => {
      const values = SCALE_OPERATIONS.map((op) => of(run.operations[op])).filter((v): v is number => v !== undefined);
      return values.length > 0 ? Math.max(...values) : undefined;
    };
    return (
      `| ${run.kind === "floor-shaped" ? "shaped floor" : run.kind} | ${run.n} | ${mib(up.enginePeakBytes)} | ${up.engineProcesses} | ${mib(up.providerPeakBytes)} | ${up.providerProcesses} | ` +
      `${mib(peak((op) => op.enginePeakBytes))} | ${mib(peak((op) => op.providerPeakBytes))} |`
    );
  });
  return [
    "| kind | N | engine peak during up, MiB | engine processes seen | provider peak during up, MiB | provider processes seen | engine peak, any operation | provider peak, any operation |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
}

function fleetTable(results: ScaleResults): string[] {
  const baseline = median(results.fleetBaseline.ensureSeconds);
  const many = new Map(growth(results.fleet.map((f) => [f.n, f.ensureManySeconds] as const)).map((row) => [row.n, row]));
  const rows = [results.fleetBaseline, ...results.fleet.filter((f) => f !== results.fleetBaseline && f.n !== results.fleetBaseline.n)]
    .sort((a, b) => a.n - b.n)
    .map((f: FleetScaleRun) => {
      const one = median(f.ensureSeconds);
      const vsBaseline = one / baseline;
      const row = many.get(f.n);
      const growthText = row !== undefined && row.nRatio > 1 ? `${fixed(row.ratio)}x for ${fixed(row.nRatio, 0)}x N ${mark(withinGrowth(row))}` : "–";
      return (
        `| ${f.n}${many.has(f.n) ? "" : " (baseline)"} | ${fixed(f.ensureManySeconds, 1)} | ${fixed((f.ensureManySeconds / f.n) * 1000, 1)} | ${fixed(row?.marginalMsPerGroup, 1)} | ${growthText} | ` +
        `${fixed(one)}${range(f.ensureSeconds)} | ${f.n === results.fleetBaseline.n ? "1.00x" : `**${fixed(vsBaseline)}x** ${mark(vsBaseline <= SCALE_GOALS.ensureVsBaseline)}`} | ${fixed(median(f.listSeconds))} | ${f.listed} |`
      );
    });
  return [
    "| N | ensureMany of N new, s | ms per group | marginal ms per group | growth from the smallest N | one ensure of a new group, s (median, fastest–slowest) | one ensure / in a fleet of 300 | list, s | listed |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
}

function crashTable(results: ScaleResults): string[] {
  const rows = results.crash.map(
    (t, i) =>
      `| ${i + 1} | ${t.n} | ${t.killed ? `${t.createdAtKill} (${fixed(t.killAfterSeconds, 1)} s in)` : "not killed"} | ${t.createdBeforeRecover} | ${t.killedTree} / ${t.outlived} | ` +
      `${fixed(t.recoverSeconds, 1)} | ${t.pending} / ${t.adopted} | ${t.removedLocks} / ${t.repairedFiles} | ${t.problems.length === 0 && t.killed ? "yes" : t.problems.join("; ") || "no kill"} |`,
  );
  return [
    "| trial | N | groups on the server at the kill | when recovery started | killed processes / outlived the group kill | recover, s | pending / adopted | stale locks removed / torn files repaired | consistent |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
}

/** One line per goal: the figure, and whether it holds (figures only at the sizes the goal names, when measured). */
export function scaleVerdicts(results: ScaleResults): string[] {
  const lines: string[] = [];
  const up = growth(seriesOf(results, "ours", "up"));
  for (const row of up.slice(1)) {
    lines.push(`- up of ${row.n} / up of ${up[0]!.n}: ${fixed(row.ratio)}x for ${fixed(row.nRatio, 0)}x the groups ${mark(withinGrowth(row))} (goal: at most ${fixed(row.nRatio, 0)}x)`);
  }
  // Issue 44 item 3: each whole-set operation within 2x the shaped floor measured in the same run.
  for (const operation of SCALE_OPERATIONS) {
    for (const [n, seconds] of seriesOf(results, "ours", operation)) {
      const shaped = runOf(results, "floor-shaped", n)?.operations[operation].seconds;
      if (shaped === undefined) continue;
      const ratio = seconds / shaped;
      lines.push(`- ${CHART_NAMES[operation]} at ${n} groups: ${fixed(seconds, 1)} s, ${fixed(ratio)}x the shaped floor's ${fixed(shaped, 1)} s ${mark(ratio <= SCALE_GOALS.vsShapedFloor)} (goal: at most ${SCALE_GOALS.vsShapedFloor}x, ${fixed(shaped * SCALE_GOALS.vsShapedFloor, 1)} s)`);
    }
  }
  const preview = seriesOf(results, "ours", "preview-unchanged").filter(([n]) => n >= SCALE_GOALS.previewUnchangedAtN);
  const engine = new Map(previewEngineSeries(results));
  for (const [n, seconds] of preview) {
    const engineSeconds = engine.get(n);
    const withEngine = engineSeconds !== undefined ? `; with the engine run for every shard ${fixed(engineSeconds, 1)} s` : "";
    lines.push(`- unchanged preview of ${n}: ${fixed(seconds, 1)} s ${mark(seconds < SCALE_GOALS.previewUnchangedSeconds)} (goal: under ${SCALE_GOALS.previewUnchangedSeconds} s${withEngine})`);
  }
  const baseline = median(results.fleetBaseline.ensureSeconds);
  for (const f of results.fleet.filter((f) => f.n > results.fleetBaseline.n)) {
    const ratio = median(f.ensureSeconds) / baseline;
    lines.push(`- one new group's ensure in a fleet of ${f.n} / in a fleet of ${results.fleetBaseline.n}: ${fixed(ratio)}x ${mark(ratio <= SCALE_GOALS.ensureVsBaseline)} (goal: at most ${SCALE_GOALS.ensureVsBaseline}x)`);
  }
  const consistent = results.crash.filter((t) => t.killed && t.problems.length === 0).length;
  if (results.crash.length > 0) lines.push(`- crash trials: ${consistent} of ${results.crash.length} killed halfway and recovered consistent ${mark(consistent === results.crash.length)}`);
  return lines;
}

export function scaleMarkdown(results: ScaleResults): string {
  return [
    "### Goals",
    "",
    ...scaleVerdicts(results),
    "",
    "### CLI operations against the two floors",
    "",
    "One fresh file backend per kind and N, the unthrottled emulator; seconds of one run each. The growth column divides the time at N by the time at the smallest N (linear with no fixed part: equal to the N ratio). Judge by the shaped floor. " +
      (results.floorCheckpoints
        ? "The floors ran in one stack with Pulumi's checkpoint after every step, as a stack of ours does."
        : "The floors ran in one stack with `PULUMI_SKIP_CHECKPOINTS=true`: the engine's own linear cost of N resources in one run, with no state write per step (with them one stack costs the square of N)."),
    "",
    ...cliTable(results),
    ...floorGrowthTable(results),
    "",
    "### Peak resident memory (VmHWM)",
    "",
    "Largest single process of each kind, during the up and during any of the four operations; the processes seen during the up are counted (a sharded run starts several engines and providers; a run may also start a provider more than once).",
    "",
    ...memoryTable(results),
    "",
    "### The fleet (`UserGroupFleet`)",
    "",
    `ensureMany of N new groups on a fresh stack, then ${results.fleetBaseline.ensureSeconds.length} ensures of one new group each, one after the other, then two lists of the whole fleet.`,
    "",
    ...fleetTable(results),
    "",
    "### Crash trials: `user-groups up` SIGKILLed halfway, then `recoverStack`",
    "",
    `The command runs in a process group of its own and gets SIGKILL once half of its groups exist on the server (each API request delayed ${results.crashDelayMs} ms so that some are in flight); ` +
      "then `recoverStack` with the same groups. Consistent: every declared group on the server exactly once and nothing else, recover's token output for each equal to the server's, " +
      "a preview with nothing to change, and `detectDrift` in sync for every group (the state's names and tokens are the server's).",
    "",
    ...crashTable(results),
  ].join("\n");
}

const COLORS: Record<ScaleOperation, string> = { up: "#1f77b4", "preview-unchanged": "#2ca02c", drift: "#9467bd", destroy: "#d62728" };
const CHART_NAMES: Record<ScaleOperation, string> = { up: "up", "preview-unchanged": "preview, same", drift: "drift", destroy: "destroy" };

/** Milliseconds per group against N: a flat line is a linear cost. A quick run says so in the title. */
export function scaleChart(results: ScaleResults, mode: "quick" | "full" = "full"): string {
  const perGroup = (points: ReadonlyArray<readonly [number, number]>) => growth(points).map((r) => [r.n, r.msPerGroup] as const);
  return lineChart({
    title: `Cost per group against N (flat: linear)${mode === "quick" ? ", QUICK RUN" : ""}`,
    xLabel: "N groups (log scale)",
    yLabel: "wall time per group, ms",
    series: [
      ...SCALE_OPERATIONS.map((op) => ({ name: CHART_NAMES[op], color: COLORS[op], points: perGroup(seriesOf(results, "ours", op)) })),
      { name: "up, shaped floor", color: COLORS.up, dashed: true, points: perGroup(seriesOf(results, "floor-shaped", "up")) },
      { name: "fleet ensureMany", color: "#ff7f0e", points: perGroup(results.fleet.map((f) => [f.n, f.ensureManySeconds] as const)) },
    ],
  });
}
