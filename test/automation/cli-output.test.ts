// The CLI's pure parts: argument rules, progress on a terminal and in CI, the table.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { describe, expect, it } from "vitest";
import type { GroupEvent, RunResult } from "../../provider/automation/index";
import { formatTable, parseCliArgs, progressPrinter, UsageError } from "../../provider/cli/user-groups";

const event = (resourceName: string, change: GroupEvent["change"], phase: GroupEvent["phase"]): GroupEvent => ({
  resourceName,
  change,
  phase,
  engineEvent: {} as EngineEvent,
});

describe("parseCliArgs", () => {
  it("reads an operation and its options", () => {
    expect(parseCliArgs(["up", "-f", "g.yaml", "--stack", "prod", "--yes", "--parallel", "4"])).toEqual({
      operation: "up",
      file: "g.yaml",
      stack: "prod",
      yes: true,
      force: false,
      allowDeleteAll: false,
      json: false,
      showSecrets: false,
      expectNoChanges: false,
      refresh: false,
      parallel: 4,
    });
  });

  it("takes --force with up and destroy only, and checks the stack name before anything runs", () => {
    expect(parseCliArgs(["destroy", "--stack", "fleet", "--force", "--yes"])).toMatchObject({ operation: "destroy", force: true });
    expect(() => parseCliArgs(["preview", "-f", "g.yaml", "--force"])).toThrow(/--force goes with up or destroy/);
    expect(() => parseCliArgs(["up", "-f", "g.yaml", "--stack", "../x"])).toThrow(/--stack takes letters, digits/);
  });

  it("takes --allow-delete-all with up/recover and --max-deletes N with up/recover/destroy", () => {
    expect(parseCliArgs(["up", "-f", "g.yaml", "--allow-delete-all", "--max-deletes", "3"])).toMatchObject({ allowDeleteAll: true, maxDeletes: 3 });
    expect(parseCliArgs(["destroy", "--max-deletes", "0"])).toMatchObject({ maxDeletes: 0 });
    expect(() => parseCliArgs(["destroy", "--allow-delete-all"])).toThrow(/--allow-delete-all goes with up or recover/);
    expect(() => parseCliArgs(["preview", "-f", "g.yaml", "--max-deletes", "1"])).toThrow(/--max-deletes goes with up, recover or destroy/);
    for (const bad of ["-1", "1.5", "x", "", "1e3"]) expect(() => parseCliArgs(["up", "-f", "g.yaml", `--max-deletes=${bad}`]), bad).toThrow(/whole number of 0 or more/);
  });

  it("refuses a --backend-url that holds a password, without repeating it", () => {
    for (const url of ["postgres://u:s3cr%40t@db/x", "postgres://u:p@ss:w@db/x", "postgres://db/x?sslmode=disable&password=hunter2"]) {
      const error = (() => {
        try {
          parseCliArgs(["preview", "-f", "g.yaml", "--backend-url", url]);
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(error, url).toBeInstanceOf(UsageError);
      expect(error!.message).toMatch(/holds a password[\s\S]*PULUMI_BACKEND_URL/);
      expect(error!.message).not.toMatch(/s3cr|p@ss|hunter2/);
    }
    expect(parseCliArgs(["preview", "-f", "g.yaml", "--backend-url", "postgres://user@db:5432/x?sslmode=disable"])).toMatchObject({
      backendUrl: "postgres://user@db:5432/x?sslmode=disable",
    });
  });

  it("reads recover, which goes with --file and --stack like up", () => {
    expect(parseCliArgs(["recover", "--file", "g.yaml", "-s", "prod", "-y"])).toMatchObject({ operation: "recover", file: "g.yaml", stack: "prod", yes: true });
  });

  it.each([
    [["deploy", "--file", "g.yaml"], /one of preview, up, refresh, destroy, drift, recover, validate, not "deploy"/],
    [["validate"], /--file is required for validate/],
    [["refresh", "--summary-file", "s.md"], /--summary-file goes with preview, up or drift/],
    [["up", "-f", "g.yaml", "--lock-timeout", "10 minutes"], /--lock-timeout takes a duration/],
    [["up", "-f", "g.yaml", "--lock-timeout", "48h"], /at most a day/],
    [["up"], /--file is required/],
    [["up", "--file", "g.yaml", "--expect-no-changes"], /goes with preview or refresh/],
    [["preview", "--file", "g.yaml", "--show-secrets"], /goes with --json/],
    [["preview", "--file", "g.yaml", "--parallel", "0"], /whole number/],
    [["preview", "--file", "g.yaml", "--colour"], /Unknown option/],
  ])("refuses %j", (argv, message) => {
    expect(() => parseCliArgs(argv)).toThrow(UsageError);
    expect(() => parseCliArgs(argv)).toThrow(message);
  });
});

describe("progressPrinter", () => {
  it("prints one plain line per step in CI, skipping unchanged groups", () => {
    const out: string[] = [];
    const print = progressPrinter((text) => out.push(text), false);
    print(event("default.acme", "create", "started"));
    print(event("default.globex", "same", "done"));
    print(event("default.acme", "create", "done"));
    expect(out).toEqual(["  + default.acme: create ...\n", "  + default.acme: create done\n"]);
  });

  it("on a terminal: a progress line and the groups in flight, redrawn in place", () => {
    const screen = new FakeTerminal();
    const print = progressPrinter(screen.write, true, { total: 3 });
    print(event("default.acme", "create", "started"));
    print(event("default.globex", "delete", "started"));
    expect(screen.lines()).toEqual(["  0/3 done, 0 failed, 2 in flight", "  + default.acme: create ...", "  - default.globex: delete ..."]);
    print(event("default.acme", "create", "done"));
    print(event("default.initech", "same", "done"));
    expect(screen.lines()).toEqual(["  2/3 done, 0 failed, 1 in flight", "  - default.globex: delete ..."]);
    print(event("default.globex", "delete", "failed"));
    print.finish();
    // A failure stays on the screen above the progress line.
    expect(screen.lines()).toEqual(["  - default.globex: delete FAILED", "  2/3 done, 1 failed, 0 in flight"]);
  });

  it("a 1000-group up on a terminal writes O(N) bytes and never more than 10 rows in flight", () => {
    const run = (groups: number) => {
      const screen = new FakeTerminal();
      const print = progressPrinter(screen.write, true, { total: groups, columns: 80 });
      let widest = 0;
      // Pulumi's default parallelism and more: 40 groups in flight at a time.
      for (let i = 0; i < groups + 40; i++) {
        if (i < groups) print(event(`default.group-${i}`, "create", "started"));
        if (i >= 40) print(event(`default.group-${i - 40}`, i % 100 === 0 ? "failed" : "create", i % 100 === 0 ? "failed" : "done"));
        widest = Math.max(widest, screen.lines().length);
      }
      print.finish();
      return { bytes: screen.bytes, widest, screen };
    };
    const thousand = run(1000);
    const twoThousand = run(2000);
    // Bounded work per event: about 1 KiB per group (the old task list: ~40 MB for 1000 groups).
    expect(thousand.bytes).toBeLessThan(1000 * 2048);
    expect(twoThousand.bytes / thousand.bytes).toBeLessThan(2.2);
    // Failures (10 of them) stay; the block itself is a progress line, 10 rows and a "more" line.
    expect(thousand.widest).toBeLessThanOrEqual(10 + 1 + 10 + 1);
    const last = thousand.screen.lines();
    expect(last.at(-1)).toBe("  990/1000 done, 10 failed, 0 in flight");
    expect(last.filter((l) => l.includes("FAILED"))).toHaveLength(10);
  });
});

/** A terminal that understands what the printer sends: text, newline, erase line, cursor up; and counts bytes. */
class FakeTerminal {
  private readonly screen: string[] = [];
  private row = 0;
  bytes = 0;
  write = (text: string): void => {
    this.bytes += Buffer.byteLength(text);
    const pattern = /\u001b\[(\d*)([AK])|\n|[^\u001b\n]+/g;
    for (const match of text.matchAll(pattern)) {
      if (match[0] === "\n") this.row++;
      else if (match[2] === "A") this.row = Math.max(0, this.row - Number(match[1] || 1));
      else if (match[2] === "K") this.screen[this.row] = "";
      else this.screen[this.row] = (this.screen[this.row] ?? "") + match[0];
    }
  };
  lines(): string[] {
    return this.screen.filter((line) => line !== "");
  }
}

describe("formatTable", () => {
  it("lines up the groups and sums up, without tokens", () => {
    const result: RunResult = {
      operation: "up",
      stack: "prod",
      backendUrl: "file:///tmp/x",
      changed: true,
      summary: { create: 1, update: 0, replace: 0, delete: 0, same: 1 },
      groups: [
        { resourceName: "default.acme", userGroupId: "acme", change: "create", token: "f".repeat(64), teamId: 7, apiEnvironmentTag: "Customer" },
        { resourceName: "testing.acme-long-name", userGroupId: "acme-long-name", profile: "testing", change: "same" },
      ],
    };
    expect(formatTable(result)).toBe(
      [
        "GROUP                     PROFILE  ENVIRONMENT  CHANGE  TEAM ID",
        "+ default.acme            default  Customer     create  7",
        "  testing.acme-long-name  testing               same",
        "",
        'up of stack "prod": 1 create, 0 update, 0 replace, 0 delete, 1 unchanged',
      ].join("\n"),
    );
  });

  it("shows under each changed group its fields old -> new, flags a rotation and a deletion, never a token", () => {
    const result: RunResult = {
      operation: "preview",
      stack: "prod",
      backendUrl: "file:///tmp/x",
      changed: true,
      summary: { create: 0, update: 1, replace: 0, delete: 1, same: 0 },
      groups: [
        {
          resourceName: "default.acme",
          userGroupId: "acme",
          change: "update",
          changedFields: ["name", "properties", "rotationTrigger"],
          fieldChanges: [
            { field: "name", old: "Acme", new: "Acme Corp" },
            { field: "properties", old: { seats: 40, region: "eu" }, new: { seats: 41, region: "eu", plan: "team" } },
            { field: "rotationTrigger", old: "2026-10", new: "2026-11" },
          ],
          token: "e".repeat(64),
        },
        { resourceName: "default.old", userGroupId: "old", change: "delete", fieldChanges: [{ field: "name", old: "Old Co" }] },
      ],
    };
    expect(formatTable(result)).toBe(
      [
        "GROUP           PROFILE  ENVIRONMENT  CHANGE  TEAM ID",
        "~ default.acme  default               update",
        '      name: "Acme" → "Acme Corp"',
        '      properties.plan: (none) → "team"',
        "      properties.seats: 40 → 41",
        '      token rotation (rotationTrigger "2026-10" → "2026-11"): the old token stops working at once',
        "- default.old   default               delete",
        '      deleted (no longer declared; was "Old Co"): the group and its token are gone at once',
        "",
        'preview of stack "prod": 0 create, 1 update, 0 replace, 1 delete, 0 unchanged',
      ].join("\n"),
    );
  });
});
