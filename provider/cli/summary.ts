// Markdown summaries for reviewers (a pull request comment, GITHUB_STEP_SUMMARY):
// counts, then one row per changed group with what changes (old -> new of each
// field, rotations and deletions flagged: change-lines.ts); unchanged groups
// are only counted. Bounded (GitHub refuses a step summary over 1 MiB and a
// comment over 65,536 characters) and never a token: only names, changes and
// field names are written.
import type { DriftReport, GroupResult, RunResult } from "../automation/internal";
import { changeLines } from "./change-lines";
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

const TITLES: Record<RunResult["operation"], string> = { preview: "Preview", up: "Applied", refresh: "Refresh", destroy: "Destroy" };

export function runSummaryMarkdown(result: RunResult, maxChars = MAX_SUMMARY_CHARS): string {
  const s = result.summary;
  const head = [
    `### user-groups: ${TITLES[result.operation]} of stack ${markdownCode(result.stack)}`,
    "",
    `**${s.create} to create, ${s.update} to update, ${s.replace} to replace, ${s.delete} to delete, ${s.same} unchanged**`,
  ];
  const changed = result.groups.filter((g) => g.change !== "same" && g.change !== "read" && g.change !== "refresh");
  if (changed.length === 0) return [...head, "", "No changes."].join("\n") + "\n";
  head.push("", "| Group | Change | What changes |", "| --- | --- | --- |");
  const rows = changed.map((g) => `| ${markdownCell(g.resourceName)} | ${g.change} | ${whatChanges(g)} |`);
  const unchanged = result.groups.length - changed.length;
  const tail = unchanged > 0 ? ["", `${unchanged} unchanged ${unchanged === 1 ? "group" : "groups"} not listed.`] : [];
  return `${boundedTable(head, rows, tail, maxChars)}\n`;
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
  const rows = report.drift.map((d) => `| ${markdownCell(d.resourceName)} | ${d.kind} | ${markdownCell(d.detail)} |`);
  return `${boundedTable(head, rows, [], maxChars)}\n`;
}
