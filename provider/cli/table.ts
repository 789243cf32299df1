// Tables for a terminal or a CI log: never a token, and every cell of outside
// text escaped (terminalText), so that no id or name can move the cursor,
// hide the rest of the table or fake a row.
import type { DriftReport, RunResult } from "../automation/internal";
import { changeLines } from "./change-lines";
import { CHANGE_SYMBOL } from "./progress";
import { terminalText } from "./terminal-text";

function columns(header: string[], cells: string[][]): string[] {
  const rows = cells.map((row) => row.map(terminalText));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), ...rows.map(line)];
}

export function formatTable(result: RunResult): string {
  const rows = result.groups.map((g) => [
    `${CHANGE_SYMBOL[g.change] ?? " "} ${g.resourceName}`,
    g.profile ?? "default",
    g.apiEnvironmentTag ?? "",
    g.change,
    g.teamId !== undefined ? String(g.teamId) : "",
  ]);
  const s = result.summary;
  const counts = `${s.create} create, ${s.update} update, ${s.replace} replace, ${s.delete} delete, ${s.same} unchanged`;
  const [header, ...lines] = columns(["GROUP", "PROFILE", "ENVIRONMENT", "CHANGE", "TEAM ID"], rows);
  // Under each updated, replaced or deleted group: what changes, old -> new (a new group needs no more than its row).
  const withDetails = lines.flatMap((line, i) => {
    const group = result.groups[i]!;
    const details = group.change === "update" || group.change === "replace" || group.change === "delete" ? changeLines(group) : [];
    return [line, ...details.map((detail) => `      ${detail}`)];
  });
  return [header!, ...withDetails, "", `${result.operation} of stack "${result.stack}": ${counts}`].join("\n");
}

export function formatDriftTable(report: DriftReport): string {
  const verdict = report.inSync
    ? `drift of stack "${report.stack}": in sync (${report.checked} groups read, nothing changed)`
    : `drift of stack "${report.stack}": ${report.drift.length} ${report.drift.length === 1 ? "difference" : "differences"} in ${report.checked} groups read (nothing changed)`;
  if (report.inSync) return verdict;
  const rows = report.drift.map((d) => [d.resourceName, d.kind, d.detail]);
  return [...columns(["GROUP", "DRIFT", "DETAIL"], rows), "", verdict].join("\n");
}
