// Tables for a terminal or a CI log: never a token, and every cell of outside
// text escaped (terminalText), so that no id or name can move the cursor,
// hide the rest of the table or fake a row.
import type { DriftReport, RunResult } from "../../automation/internal";
import { changeLines } from "./change-lines";
import { CHANGE_SYMBOL } from "./progress";
import { countsText, driftDetail } from "./summary";
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
  const [header, ...lines] = columns(["GROUP", "PROFILE", "ENVIRONMENT", "CHANGE", "TEAM ID"], rows);
  // Under each created, updated, replaced or deleted group: what it declares, or what changes, old -> new.
  const withDetails = lines.flatMap((line, i) => {
    const group = result.groups[i]!;
    const details = ["create", "update", "replace", "delete"].includes(group.change) ? changeLines(group).filter((detail) => detail !== "new group") : [];
    return [line, ...details.map((detail) => `      ${terminalText(detail)}`)];
  });
  return [header!, ...withDetails, "", `${result.operation} of stack "${terminalText(result.stack)}": ${countsText(result)}`].join("\n");
}

export function formatDriftTable(report: DriftReport): string {
  const verdict = report.inSync
    ? `drift of stack "${report.stack}": in sync (${report.checked} groups read, nothing changed)`
    : `drift of stack "${report.stack}": ${report.drift.length} ${report.drift.length === 1 ? "difference" : "differences"} in ${report.checked} groups read (nothing changed)`;
  if (report.inSync) return verdict;
  const rows = report.drift.map((d) => [d.resourceName, d.kind, d.detail]);
  const [header, ...lines] = columns(["GROUP", "DRIFT", "DETAIL"], rows);
  // Under each drift: every differing input, old -> new (properties key by key).
  const withDetails = lines.flatMap((line, i) => [line, ...driftDetail(report.drift[i]!).slice(1).map((detail) => `      ${terminalText(detail)}`)]);
  return [header!, ...withDetails, "", verdict].join("\n");
}
