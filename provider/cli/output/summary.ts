// Markdown summaries for reviewers (a pull request comment, GITHUB_STEP_SUMMARY):
// counts, then one row per changed group with what changes (old -> new of each
// field, rotations and deletions flagged: change-lines.ts); unchanged groups
// are only counted. Bounded (GitHub refuses a step summary over 1 MiB and a
// comment over 65,536 characters) and never a token: only names, changes and
// field names are written.
import type { DriftReport, GroupResult, RunResult } from "../../automation/internal";
import { changeLines, fieldChangeLines } from "./change-lines";
import { markdownCell, markdownCode } from "./markdown-text";

export { markdownCell, markdownCode } from "./markdown-text";

export const MAX_SUMMARY_CHARS = 60_000;

/** A changed group's cell: each point of changeLines, escaped, joined. */
function whatChanges(group: GroupResult): string {
  return changeLines(group).map((line) => markdownCell(line)).join("; ");
}

/** Rows until the budget is spent, then one "... and N more" line. */
function boundedTable(head: string[], rows: string[], tail: string[], maxChars: number): string {
  const out = [...head];
  let used = head.join("\n").length + tail.join("\n").length + 2;
  let shown = 0;
  for (const row of rows) {
    // Room kept for the "... and N more" line.
    if (used + row.length + 1 + 60 > maxChars) break;
    out.push(row);
    used += row.length + 1;
    shown++;
  }
  if (shown < rows.length) out.push("", `... and ${rows.length - shown} more`);
  return [...out, ...tail].join("\n");
}

/** What a run did (or, for a preview, would do) to a stack, as a heading. */
const TITLES: Record<RunResult["operation"], string> = {
  preview: "Preview of stack",
  up: "Applied to stack",
  refresh: "Refreshed stack",
  destroy: "Destroyed stack",
};

/** `1 to create, ...` for a preview; `1 created, ...` for what a run did. */
export function countsText(result: RunResult): string {
  const s = result.summary;
  const counts: Array<[number, string, string]> = [
    [s.create, "to create", "created"],
    [s.update, "to update", "updated"],
    [s.replace, "to replace", "replaced"],
    [s.delete, "to delete", "deleted"],
  ];
  const done = result.operation !== "preview";
  return [...counts.map(([n, planned, past]) => `${n} ${done ? past : planned}`), `${s.same} unchanged`].join(", ");
}

export function runSummaryMarkdown(result: RunResult, maxChars = MAX_SUMMARY_CHARS): string {
  const head = [`### user-groups: ${TITLES[result.operation]} ${markdownCode(result.stack)}`, "", `**${countsText(result)}**`];
  const changed = result.groups.filter((g) => g.change !== "same" && g.change !== "read" && g.change !== "refresh");
  if (changed.length === 0) return [...head, "", "No changes."].join("\n") + "\n";
  head.push("", "| Group | Change | What changes |", "| --- | --- | --- |");
  const rows = changed.map((g) => `| ${markdownCell(g.resourceName)} | ${g.change} | ${whatChanges(g)} |`);
  const unchanged = result.groups.length - changed.length;
  const tail = unchanged > 0 ? ["", `${unchanged} unchanged ${unchanged === 1 ? "group" : "groups"} not listed.`] : [];
  return `${boundedTable(head, rows, tail, maxChars)}\n`;
}

/** A drift's detail, then each differing input old -> new (properties key by key). */
export function driftDetail(drift: DriftReport["drift"][number]): string[] {
  return [drift.detail, ...fieldChangeLines(drift.fieldChanges ?? [])];
}

export function driftSummaryMarkdown(report: DriftReport, maxChars = MAX_SUMMARY_CHARS): string {
  const head = [`### user-groups: drift of stack ${markdownCode(report.stack)}`, ""];
  if (report.inSync) return [...head, `**In sync**: ${report.checked} groups read, nothing changed.`].join("\n") + "\n";
  const counts = new Map<string, number>();
  for (const d of report.drift) counts.set(d.kind, (counts.get(d.kind) ?? 0) + 1);
  head.push(
    `**${[...counts].map(([kind, n]) => `${n} ${kind}`).join(", ")}** (${report.checked} groups read; nothing was changed)`,
    "",
    "| Group | Drift | Detail |",
    "| --- | --- | --- |",
  );
  const rows = report.drift.map((d) => `| ${markdownCell(d.resourceName)} | ${d.kind} | ${driftDetail(d).map((line) => markdownCell(line)).join("; ")} |`);
  return `${boundedTable(head, rows, [], maxChars)}\n`;
}
