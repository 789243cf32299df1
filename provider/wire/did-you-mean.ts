// "Did you mean": the closest of the words a place accepts, for a command, an
// option (cli/args.ts) or a key of a groups file (automation/model).

/** Edit distance counting a swap of two neighbours as one edit (optimal string alignment), for "did you mean". */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest of the candidates (a typo or a prefix), or undefined when none is close. */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  // Outside text: a long word is nobody's typo, and the distance table grows with its length.
  if (word.length > 100) return undefined;
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(word) && word.length >= 2 ? 0.5 : editDistance(word, candidate);
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
