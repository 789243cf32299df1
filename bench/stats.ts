// Small numeric helpers shared by the benchmarks.

/** The q-quantile of ascending `sorted` (nearest rank); NaN when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** The middle value, or the mean of the two middle ones; NaN when empty. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  if (sorted.length % 2 === 1) return percentile(sorted, 0.5);
  return sorted.length === 0 ? NaN : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}
