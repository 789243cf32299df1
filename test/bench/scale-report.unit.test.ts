// The scale benchmark's report (bench/scale-report.ts): growth and marginal cost
// from plain numbers, each goal judged at the sizes issue 24 names.
import { describe, expect, it } from "vitest";
import type { CliRun, FleetScaleRun, ScaleKind, ScaleResults, TimedOperation } from "../../bench/scale";
import { growth, scaleChart, scaleMarkdown, scaleVerdicts, withinGrowth } from "../../bench/scale-report";

const op = (seconds: number): TimedOperation => ({ seconds, engineProcesses: 1, providerProcesses: 1, engineCpuSeconds: 1, providerCpuSeconds: 1, enginePeakBytes: 200 * 1024 ** 2 });

/** A run whose every operation takes `fixed + perGroup * n` seconds. */
function cli(kind: ScaleKind, n: number, fixed: number, perGroup: number): CliRun {
  const t = op(fixed + perGroup * n);
  return { kind, n, operations: { up: t, "preview-unchanged": t, drift: t, destroy: t } };
}

function fleet(n: number, ensure: number): FleetScaleRun {
  const { seconds: _, ...cost } = op(0);
  return { n, ensureManySeconds: n / 100, ensureSeconds: [ensure, ensure * 2, ensure / 2], listSeconds: [0.5, 0.7], listed: n + 3, ensureMany: cost };
}

function results(perGroupAt10k: number, ensureAt3k: number): ScaleResults {
  const ns = [1000, 3000, 10_000];
  return {
    ns,
    cli: ns.flatMap((n) => [cli("floor", n, 2, 0.001), cli("floor-shaped", n, 2, 0.002), cli("ours", n, 2, n === 10_000 ? perGroupAt10k : 0.004)]),
    fleet: [fleet(1000, 4), fleet(3000, ensureAt3k)],
    fleetBaseline: fleet(300, 4),
    crash: [],
    crashDelayMs: 50,
    floorCheckpoints: false,
  };
}

describe("scale report", () => {
  it("computes per-group and marginal cost and growth from the smallest N, whatever order the points come in", () => {
    const rows = growth([
      [3000, 14],
      [1000, 6],
      [10_000, 42],
    ]);
    expect(rows.map((r) => r.n)).toEqual([1000, 3000, 10_000]);
    expect(rows[0]!.marginalMsPerGroup).toBeUndefined();
    expect(rows[0]!.msPerGroup).toBeCloseTo(6);
    expect(rows[1]!.marginalMsPerGroup).toBeCloseTo(4); // (14 - 6) s / 2000 groups
    expect(rows[2]!.marginalMsPerGroup).toBeCloseTo(4);
    expect(rows[2]!.ratio).toBeCloseTo(7);
    expect(rows[2]!.nRatio).toBe(10);
    expect(withinGrowth(rows[2]!)).toBe(true);
    expect(growth([])).toEqual([]);
  });

  it("fails growth that is worse than linear", () => {
    const [, row] = growth([
      [1000, 10],
      [10_000, 101],
    ]);
    expect(withinGrowth(row!)).toBe(false);
  });

  it("judges each goal: up growth, the unchanged preview at 10,000, one ensure against a fleet of 300", () => {
    const good = scaleVerdicts(results(0.004, 5));
    expect(good.filter((line) => line.includes("✗"))).toEqual([]);
    expect(good.some((line) => line.startsWith("- unchanged preview of 10000: 42.0 s ✓"))).toBe(true);
    // Quadratic at 10,000 (10 ms per group): the up grows 10.2x (over 10x) and the preview takes 102 s.
    const bad = scaleVerdicts(results(0.01, 7));
    expect(bad.find((line) => line.startsWith("- up of 10000"))).toContain("✗");
    expect(bad.find((line) => line.startsWith("- unchanged preview"))).toContain("✗");
    expect(bad.find((line) => line.includes("fleet of 3000"))).toContain("1.75x ✗");
  });

  it("judges every operation at every N against 2x the shaped floor of the same run (issue 44)", () => {
    // Ours 2 s + 4 ms per group, the shaped floor 2 s + 2 ms: 1.5x at 1,000, 1.91x at 10,000.
    const good = scaleVerdicts(results(0.004, 5)).filter((line) => line.includes("the shaped floor"));
    expect(good).toHaveLength(12);
    expect(good).toContain("- destroy at 10000 groups: 42.0 s, 1.91x the shaped floor's 22.0 s ✓ (goal: at most 2x, 44.0 s)");
    // 10 ms per group at 10,000: 4.64x.
    const bad = scaleVerdicts(results(0.01, 5)).filter((line) => line.includes("the shaped floor"));
    expect(bad.filter((line) => line.includes("✗")).map((line) => line.split(":")[0])).toEqual(["- up at 10000 groups", "- preview, same at 10000 groups", "- drift at 10000 groups", "- destroy at 10000 groups"]);
    expect(bad.find((line) => line.startsWith("- destroy at 10000 groups"))).toContain("4.64x");
  });

  it("writes every table and a chart with one line per operation", () => {
    const r = results(0.004, 5);
    const markdown = scaleMarkdown(r);
    for (const heading of ["### Goals", "### CLI operations against the two floors", "### Peak resident memory (VmHWM)", "### The fleet (`UserGroupFleet`)", "### Crash trials"]) {
      expect(markdown).toContain(heading);
    }
    expect(markdown).toContain("| 300 (baseline) |");
    // A run without the engine's own preview (older results) has no such row.
    expect(markdown).not.toContain("engine run for every shard");
    const svg = scaleChart(r);
    expect(svg.match(/<polyline /g)).toHaveLength(6);
  });

  it("reports the engine's own unchanged preview beside the one answered from the state", () => {
    const r = results(0.004, 5);
    const withEngine: ScaleResults = { ...r, cli: r.cli.map((run) => (run.kind === "ours" ? { ...run, previewEngine: op(2 + 0.008 * run.n) } : run)) };
    const markdown = scaleMarkdown(withEngine);
    const rows = markdown.split("\n").filter((line) => line.startsWith("| preview, nothing changed, engine run for every shard (USER_GROUPS_PREVIEW_ENGINE=always) |"));
    expect(rows.map((line) => line.split("|")[3]!.trim())).toEqual(["10.0", "26.0", "82.0"]);
    // The goal is judged on the preview users get; the engine's figure rides along.
    expect(scaleVerdicts(withEngine).find((line) => line.startsWith("- unchanged preview of 10000"))).toBe(
      "- unchanged preview of 10000: 42.0 s ✓ (goal: under 60 s; with the engine run for every shard 82.0 s)",
    );
  });
});
