// The SVG chart and Markdown table helpers of `npm run bench` (bench/), which
// write docs/performance figures: well-formed output from plain numbers.
import { describe, expect, it } from "vitest";
import { type EngineRun, mergeRuns } from "../../bench/engine-vs-floor";
import { medianRound, type Result, type ServerRound } from "../../bench/fake-server";
import { engineCharts, engineTable, ratioTable, serversTable } from "../../bench/report";
import { lineChart, niceStep } from "../../bench/svg-chart";

function run(kind: EngineRun["kind"], n: number, perResource: number): EngineRun {
  const s = n * perResource;
  const cpu = { engine: 1, provider: 1, program: 1 };
  return {
    kind,
    n,
    seconds: { preview: s, up: s, "preview-unchanged": s, destroy: s },
    cpuSeconds: { preview: cpu, up: cpu, "preview-unchanged": cpu, destroy: cpu },
    stateBytesPerResource: 1800,
    providerPeakBytes: 100 * 1024 * 1024,
  };
}

describe("bench report helpers", () => {
  it("picks 1-2-5 steps", () => {
    expect(niceStep(10)).toBe(2);
    expect(niceStep(0.9)).toBe(0.2);
    expect(niceStep(130)).toBe(50);
  });

  it("draws one polyline per series, x on a log scale", () => {
    const svg = lineChart({
      title: "t <&>",
      xLabel: "N",
      yLabel: "s",
      series: [{ name: "a", color: "red", points: [[10, 1], [100, 2], [1000, 3]] }],
    });
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg).toContain("t &lt;&amp;&gt;");
    const points = /<polyline points="([^"]+)"/.exec(svg)?.[1]?.split(" ").map((p) => Number(p.split(",")[0]));
    expect(points).toHaveLength(3);
    // Equal steps in log10(N) are equal steps on the page.
    expect(points![1]! - points![0]!).toBeCloseTo(points![2]! - points![1]!, 0);
  });

  it("tabulates ratio, time per resource and what ours adds per resource", () => {
    const runs = [run("floor", 10, 0.01), run("ours", 10, 0.011), run("floor", 100, 0.01), run("ours", 100, 0.011)];
    const table = engineTable(runs);
    expect(table).toContain("| up | 100 | 1.00 | 1.10 | 1.10 ✓ | 10.0 | 11.0 | 10.0 | 11.0 | 1.0 |");
    expect([...engineCharts(runs).keys()]).toEqual(["perf-preview.svg", "perf-up.svg", "perf-preview-unchanged.svg", "perf-destroy.svg"]);
  });

  it("compares ours with both floors when the shaped floor was measured", () => {
    const runs = [
      run("floor", 10, 0.01), run("floor-shaped", 10, 0.0125), run("ours", 10, 0.011),
      run("floor", 100, 0.01), run("floor-shaped", 100, 0.0125), run("ours", 100, 0.011),
    ];
    expect(ratioTable(runs)).toContain("| up | 100 | 1.00 | 1.25 | 1.10 | 1.10 ✓ | 0.88 ✓ |");
    expect(engineTable(runs, "floor-shaped")).toContain("| up | 100 | 1.25 | 1.10 | 0.88 ✓ | 12.5 | 11.0 | 12.5 | 11.0 | -1.5 |");
    expect(engineTable(runs)).toContain("| up | 100 | 1.00 | 1.10 | 1.10 ✓ |");
    const svg = engineCharts(runs).get("perf-up.svg") ?? "";
    expect(svg.match(/<polyline /g)).toHaveLength(3);
    expect(svg).toContain("shaped floor");
  });

  it("leaves the shaped floor out of results that lack it", () => {
    const runs = [run("floor", 10, 0.01), run("ours", 10, 0.011)];
    expect(engineTable(runs, "floor-shaped")).toBe("");
    expect(ratioTable(runs)).toContain("| up | 10 | 0.10 | – | 0.11 | 1.10 ✓ | – |");
    expect(engineCharts(runs).get("perf-up.svg")?.match(/<polyline /g)).toHaveLength(2);
  });

  it("reports the median of the repetitions and the fastest and slowest of them", () => {
    const merged = mergeRuns([run("ours", 10, 0.3), run("ours", 10, 0.1), run("ours", 10, 0.2)]);
    expect(merged.seconds.up).toBeCloseTo(2);
    expect(merged.secondsRange?.up?.[0]).toBeCloseTo(1);
    expect(merged.secondsRange?.up?.[1]).toBeCloseTo(3);
    expect(merged.repetitions).toBe(3);
    expect(ratioTable([run("floor", 10, 0.1), merged])).toContain("| up | 10 | 1.00 | – | 2.00 (1.00–3.00) | 2.00 ✗ | – |");
    // A single run has no range.
    expect(mergeRuns([run("ours", 10, 0.1)]).secondsRange).toBeUndefined();
  });

  it("pools repeated previews of every repetition into one median and range", () => {
    const withPreviews = (samples: number[]): EngineRun => ({ ...run("ours", 10, 0.1), samples: { preview: samples, up: [1], "preview-unchanged": samples, destroy: [1] } });
    const merged = mergeRuns([withPreviews([1, 2, 3]), withPreviews([4])]);
    expect(merged.seconds.preview).toBe(2.5);
    expect(merged.secondsRange?.preview).toEqual([1, 4]);
    expect(merged.secondsRange?.up).toEqual([1, 1]);
    // An operation that ran once has no range.
    expect(mergeRuns([withPreviews([1, 2, 3])]).secondsRange?.up).toBeUndefined();
    expect(merged.samples?.preview).toEqual([1, 2, 3, 4]);
  });

  it("reports the servers' median round, with every round's ratio", () => {
    const result = (rps: number, us: number): Result => ({ requests: rps * 5, seconds: 5, errors: 0, p50: 0.5, p99: 2, serverUsPerRequest: us });
    const round = (bare: number, fake: number): ServerRound => ({ bare: result(bare, 16), fake: result(fake, 18), ratio: fake / bare });
    const rounds = [round(40000, 30000), round(30000, 33000), round(40000, 38000)];
    const median = medianRound(rounds);
    expect(median.ratio).toBeCloseTo(0.95);
    const text = serversTable({
      connections: 32,
      seconds: 5,
      rounds: 3,
      bare: median.bare,
      fake: median.fake,
      throughputRatio: median.ratio,
      roundRatios: rounds.map((r) => r.ratio),
      costRatio: 16 / 18,
    });
    expect(text).toContain("| bare node:http | 40000 |");
    expect(text).toContain("| fake server | 38000 |");
    expect(text).toContain("**0.95x** (goal >= 0.9x ✓), the median of 3 rounds; every round: 0.75, 1.10, 0.95.");
    expect(() => medianRound([])).toThrow(/at least 1/);
  });
});
