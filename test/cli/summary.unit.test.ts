// The Markdown summaries for reviewers: counts, one row per changed group, bounded, no tokens.
import { describe, expect, it } from "vitest";
import type { DriftReport } from "../../provider/automation/operations/drift";
import type { GroupResult, RunResult } from "../../provider/automation/model/results";
import { driftSummaryMarkdown, MAX_SUMMARY_CHARS, markdownCell, markdownCode, runSummaryMarkdown } from "../../provider/cli/output";

const TOKEN = "a".repeat(64);

function result(groups: GroupResult[], operation: RunResult["operation"] = "preview"): RunResult {
  const summary = { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
  for (const g of groups) if (g.change in summary) summary[g.change as keyof typeof summary] += 1;
  return { operation, stack: "prod", backendUrl: "file:///x", changed: true, summary, groups };
}

const group = (name: string, change: GroupResult["change"], changedFields?: string[]): GroupResult => ({
  resourceName: `default.${name}`,
  userGroupId: name,
  change,
  token: TOKEN,
  ...(changedFields ? { changedFields } : {}),
});

describe("runSummaryMarkdown", () => {
  it("counts, then one row per changed group saying what changes; unchanged groups only counted", () => {
    const markdown = runSummaryMarkdown(
      result([
        group("acme", "update", ["name", "properties"]),
        group("globex", "replace", ["userGroupId"]),
        group("initech", "update", ["rotationTrigger"]),
        group("new", "create"),
        group("old", "delete"),
        group("same-1", "same"),
        group("same-2", "same"),
      ]),
    );
    expect(markdown).toBe(
      [
        "### user-groups: Preview of stack `prod`",
        "",
        "**1 to create, 2 to update, 1 to replace, 1 to delete, 2 unchanged**",
        "",
        "| Group | Change | What changes |",
        "| --- | --- | --- |",
        "| default.acme | update | name, properties |",
        "| default.globex | replace | replaced (userGroupId changed): a new group and token; the old token stops working at once |",
        "| default.initech | update | token rotation (the old token stops working at once) |",
        "| default.new | create | new group |",
        "| default.old | delete | deleted (no longer declared): the group and its token are gone at once |",
        "",
        "2 unchanged groups not listed.",
        "",
      ].join("\n"),
    );
    expect(markdown).not.toContain(TOKEN);
  });

  it("shows old -> new of each changed field, key by key, escaped and bounded, and never a token", () => {
    const markdown = runSummaryMarkdown(
      result([
        {
          ...group("acme", "update", ["name", "mapping", "properties", "rotationTrigger"]),
          fieldChanges: [
            { field: "name", old: "Acme", new: "Acme | *Corp*" },
            { field: "mapping", old: { sales: "eu" }, new: { sales: "us" } },
            { field: "properties", old: { note: "x".repeat(500), seats: 1 }, new: { seats: 1, bidi: "\u202eevil" } },
            { field: "rotationTrigger", old: "2026-10", new: "2026-11" },
          ],
        },
        { ...group("gone", "delete"), fieldChanges: [{ field: "name", old: "Gone Inc" }] },
      ]),
    );
    const acme = markdown.split("\n").find((l) => l.startsWith("| default.acme"))!;
    // Not plain words: a code span, where GitHub reads no markup (the pipe escaped for the table).
    expect(acme).toContain('`name: "Acme" → "Acme \\| *Corp*"`');
    expect(acme).toContain('mapping.sales: "eu" → "us"');
    expect(acme).toContain('`properties.bidi: (none) → "\\u202eevil"`');
    expect(acme).toMatch(/properties\.note: "x{50,}\.\.\. → \(none\)/);
    expect(acme).not.toContain("properties.seats");
    expect(acme).toContain('token rotation (rotationTrigger "2026-10" → "2026-11"): the old token stops working at once');
    expect(acme).not.toContain("\u202e");
    expect(acme.length).toBeLessThan(600);
    expect(markdown).toContain('| default.gone | delete | deleted (no longer declared; was "Gone Inc"): the group and its token are gone at once |');
    expect(markdown).not.toContain(TOKEN);
  });

  it("says so when nothing changes", () => {
    expect(runSummaryMarkdown(result([group("a", "same")], "up"))).toMatch(/Applied to stack `prod`[\s\S]*0 created, 0 updated, 0 replaced, 0 deleted, 1 unchanged[\s\S]*No changes\./);
  });

  it("stays under 60,000 characters for a big fleet, with a line for the rest", () => {
    const groups = Array.from({ length: 5000 }, (_, i) => group(`group-with-a-long-name-${i}`, "update", ["name", "mapping", "properties"]));
    const markdown = runSummaryMarkdown(result(groups));
    expect(markdown.length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS);
    const listed = markdown.split("\n").filter((l) => l.startsWith("| default.")).length;
    expect(listed).toBeGreaterThan(100);
    expect(markdown).toContain(`... and ${5000 - listed} more`);
  });

  it("cannot be broken out of a table cell by a group's id", () => {
    expect(markdownCell("a|b\n| x | <script> `c`")).toBe("`` a\\|b \\| x \\| <script> `c` ``");
    const markdown = runSummaryMarkdown(result([group("evil|id\n### heading", "create")]));
    expect(markdown.split("\n").filter((l) => l.startsWith("###"))).toHaveLength(1);
  });

  it("keeps plain ids and words as they are", () => {
    expect(markdownCell("default.group-1")).toBe("default.group-1");
    expect(markdownCell("replaced: userGroupId changed")).toBe("replaced: userGroupId changed");
    expect(markdownCode("prod")).toBe("`prod`");
  });

  // What GitHub would do with outside text: notify a team, make links, render markup, reorder or hide text.
  const ATTACKS = ["x\u001b[8m", "rtl\u202eevil", "@org/team", "https://evil.example", "[a](http://x)", "www.evil.example", "<https://x>", "*bold* _it_ ~~s~~", "two `` ticks", "`edge`", "zero\u200bwidth", "tag\u{e0041}"];

  /** The text of a row outside its code spans: what GitHub reads as Markdown (mentions, autolinks, markup). */
  function outsideCode(line: string): string {
    return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, "");
  }

  /** GFM table cells: split on pipes not escaped with a backslash. */
  function cells(line: string): string[] {
    return line.split(/(?<!\\)\|/).slice(1, -1);
  }

  it.each(ATTACKS)("neutralises %j in ids and in names: inert in a code span, controls shown as escapes", (attack) => {
    const markdown = runSummaryMarkdown(result([{ resourceName: `default.${attack}`, userGroupId: attack, change: "update", changedFields: [attack] }]));
    const row = markdown.split("\n").find((l) => l.startsWith("| `"))!;
    expect(row, markdown).toBeDefined();
    expect(cells(row)).toHaveLength(3);
    const markup = outsideCode(row);
    expect(markup).not.toMatch(/@|:\/\/|www\.|[<>[\]*_~]/);
    // Nothing invisible or reordering anywhere, code spans included.
    expect(markdown).not.toMatch(/[\p{Cc}\p{Cf}](?<!\n)/u);
    if (attack.includes("\u001b")) expect(row).toContain("x\\x1b[8m");
    if (attack.includes("\u202e")) expect(row).toContain("rtl\\u{202e}evil");
  });

  it("the drift summary neutralises a name the service returned", () => {
    const markdown = driftSummaryMarkdown({
      stack: "prod",
      backendUrl: "file:///x",
      checked: 1,
      inSync: false,
      drift: [{ resourceName: "default.a", userGroupId: "a", kind: "renamed", detail: 'name "A" in the state, "@org/team https://evil.example \u202e" on the service' }],
    });
    const row = markdown.split("\n").find((l) => l.startsWith("| default.a"))!;
    expect(outsideCode(row)).not.toMatch(/@|:\/\//);
    expect(row).toContain("\\u{202e}");
  });
});

describe("driftSummaryMarkdown", () => {
  const report = (drift: DriftReport["drift"]): DriftReport => ({ stack: "prod", backendUrl: "file:///x", checked: 3, inSync: drift.length === 0, drift });

  it("lists each drift with counts per kind", () => {
    const markdown = driftSummaryMarkdown(
      report([
        { resourceName: "default.a", userGroupId: "a", kind: "deleted", detail: "deleted on the service" },
        { resourceName: "default.b", userGroupId: "b", kind: "token rotated", detail: "rotated out of band" },
      ]),
    );
    expect(markdown).toContain("**1 deleted, 1 token rotated** (3 groups read; nothing was changed)");
    expect(markdown).toContain("| default.a | deleted | deleted on the service |");
  });

  it("says in sync when it is", () => {
    expect(driftSummaryMarkdown(report([]))).toContain("**In sync**: 3 groups read");
  });
});
