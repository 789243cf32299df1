// The fleet benchmark's Markdown and chart (bench/fleet.ts), each figure against its goal.
import type { FleetResults } from "./fleet.js";
import { median } from "./stats.js";
import { lineChart } from "./svg-chart.js";

/** Goals of the fleet issue. */
export const FLEET_GOALS = { ensureVsWholeSet: 0.5, concurrentRuns: 3, concurrentWallVsOne: 2, vsShapedFloor: 1.1, lostGroups: 0 } as const;

const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : "–");
const mark = (ok: boolean): string => (ok ? "✓" : "✗");
const range = (values: readonly number[]): string =>
  values.length > 1 ? ` (${fixed(Math.min(...values))}–${fixed(Math.max(...values))})` : "";

export function fleetMarkdown(results: FleetResults): string {
  const rows = results.sizes.map((size) => {
    const whole = median(size.wholeSetSeconds);
    const ensure = median(size.ensureSeconds);
    const ratio = ensure / whole;
    const goal = size.n >= 1000 ? ` ${mark(ratio <= FLEET_GOALS.ensureVsWholeSet)}` : "";
    const floor = median(size.floorOneSeconds);
    return `| ${size.n} | ${fixed(whole)}${range(size.wholeSetSeconds)} | ${fixed(ensure)}${range(size.ensureSeconds)} | **${fixed(ratio)}x**${goal} | ${fixed(floor)}${range(size.floorOneSeconds)} | ${fixed(ensure / floor)}x | ${fixed(median(size.sameSeconds))} | ${size.ensureSeconds.length} |`;
  });
  const parts = [
    "### One new group in a fleet of N",
    "",
    `Median seconds over the repetitions (fastest–slowest); goal at N = 1000: ensure <= ${FLEET_GOALS.ensureVsWholeSet}x provisionUserGroups of N+1. ` +
      "The shaped floor is a targeted `up` of one new no-op dynamic resource of a UserGroup's shape (secret token included) among N: " +
      "the engine's part of an ensure with no code of ours (an ensure also reads the state first).",
    "",
    "| N | provisionUserGroups of N+1, s | fleet.ensure of a new group, s | ensure / whole set | shaped floor, targeted up of one, s | ensure / floor | ensure of a held group, s | repetitions |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
  const c = results.concurrency;
  if (c) {
    parts.push(
      "",
      `### ${c.calls} concurrent ensures in a fleet of ${c.fleetSize}`,
      "",
      "| | wall, s | p50 per call, s | p95 per call, s | engine runs | wall / one |",
      "| --- | --- | --- | --- | --- | --- |",
      `| fleet | ${fixed(c.wallSeconds)} | ${fixed(c.p50Seconds)} | ${fixed(c.p95Seconds)} | ${c.engineRuns} ${mark(c.engineRuns <= FLEET_GOALS.concurrentRuns)} | **${fixed(c.wallSeconds / c.oneEnsureSeconds)}x** ${mark(c.wallSeconds / c.oneEnsureSeconds <= FLEET_GOALS.concurrentWallVsOne)} |`,
      `| shaped floor, one targeted up of ${c.calls} | ${fixed(c.floorWallSeconds)} | | | 1 | ${fixed(c.floorWallSeconds / c.floorOneSeconds)}x (one: ${fixed(c.floorOneSeconds)} s) |`,
      "",
      `Fleet wall / shaped floor's wall: **${fixed(c.wallSeconds / c.floorWallSeconds)}x** ${mark(c.wallSeconds / c.floorWallSeconds <= FLEET_GOALS.vsShapedFloor)} (goal by the shaped floor: <= ${FLEET_GOALS.vsShapedFloor}x).`,
      "",
      `Goals: at most ${FLEET_GOALS.concurrentRuns} engine runs, wall time at most ${FLEET_GOALS.concurrentWallVsOne}x one ensure (${fixed(c.oneEnsureSeconds)} s, the median above). ` +
        `The floor's row is the same engine work with no code of ours: its ratio is what the engine and the diy backend charge for ${c.calls} creates in one run against one.`,
    );
  }
  const p = results.processes;
  if (p) {
    parts.push(
      "",
      `### ${p.processes} processes x ${p.callsPerProcess} ensures on one stack, PostgreSQL backend`,
      "",
      "| wall, s | groups on the service | groups in the state | lost | failed calls |",
      "| --- | --- | --- | --- | --- |",
      `| ${fixed(p.wallSeconds)} | ${p.storedGroups} | ${p.heldInState} | ${p.lostGroups} ${mark(p.lostGroups === FLEET_GOALS.lostGroups)} | ${p.failedCalls} |`,
    );
  }
  return parts.join("\n");
}

/** Seconds to add one group against the fleet's size: today's whole-set run and one ensure. */
export function fleetChart(results: FleetResults): string {
  return lineChart({
    title: "Adding one group to a fleet of N",
    xLabel: "N groups already held (log scale)",
    yLabel: "wall time, s",
    series: [
      { name: "provisionUserGroups N+1", color: "#888888", points: results.sizes.map((s) => [s.n, median(s.wholeSetSeconds)] as const) },
      { name: "fleet.ensure", color: "#1f77b4", points: results.sizes.map((s) => [s.n, median(s.ensureSeconds)] as const) },
      { name: "ensure, held", color: "#2ca02c", dashed: true, points: results.sizes.map((s) => [s.n, median(s.sameSeconds)] as const) },
    ],
  });
}
