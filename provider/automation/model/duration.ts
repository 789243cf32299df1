// Durations in flags and messages. Apart from lock-wait.ts (which re-exports
// them) because that module loads @pulumi/pulumi, and the CLI parses its flags
// without it (`user-groups validate` stays fast).
/** "1.5 s", "2 min 5 s": for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1).replace(/\.0$/, "")} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return seconds > 0 ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

/** Parses a duration flag: "90s", "10m", "1h", "500ms", or a plain number of seconds. */
export function parseDurationMs(text: string): number | undefined {
  const match = /^(\d{1,9})(ms|s|m|h)?$/.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = match[2] ?? "s";
  return value * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
}
