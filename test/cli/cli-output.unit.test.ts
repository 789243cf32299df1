// The CLI's pure parts: argument rules, progress on a terminal and in CI, the table.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { GroupEvent, RunResult } from "../../provider/automation";
import {
  formatDriftTable,
  formatTable,
  main,
  parseCliArgs,
  progressPrinter,
  terminalJson,
  terminalMessage,
  terminalText,
  UsageError,
} from "../../provider/cli/user-groups";
import type { CliIo } from "../../provider/cli/io";
import { describeLockHolders } from "../../provider/cli/lock-message";

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
      rewriteProviders: false,
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
    expect(parseCliArgs(["recover", "-f", "g.yaml", "--break-lease"])).toMatchObject({ breakLease: true });
    expect(() => parseCliArgs(["up", "-f", "g.yaml", "--break-lease"])).toThrow(/--break-lease goes with recover/);
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
    [["preview", "--file", "g.yaml", "--colour"], /^unknown option --colour$/],
    [["preview", "--file", "g.yaml", "--expect-no-change"], /unknown option --expect-no-change \(did you mean --expect-no-changes\?\)/],
    [["up", "--file", "g.yaml", "--yse"], /unknown option --yse \(did you mean --yes\?\)/],
    [["preveiw", "--file", "g.yaml"], /not "preveiw" \(did you mean preview\?\)/],
    [["destory"], /not "destory" \(did you mean destroy\?\)/],
    [["deploy"], /not "deploy"$/],
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
        'up of stack "prod": 1 created, 0 updated, 0 replaced, 0 deleted, 1 unchanged',
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
        'preview of stack "prod": 0 to create, 1 to update, 0 to replace, 1 to delete, 0 unchanged',
      ].join("\n"),
    );
  });
});

// What a terminal must never receive from outside text: a control (ESC, BEL, CR...), a C1
// control, DEL, or a bidi/zero-width/format character. Only the printer's own sequences pass.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const ATTACK_IDS = ["x\u001b[8m", "rtl\u202eevil", "bell\u0007", "csi\u009b2J", "del\u007f", "fake\nrow", "cr\rover", "zw\u200bj\u200d", "iso\u2066x\u2069", "alm\u061c", "tag\u{e0041}"];

describe("outside text on a terminal", () => {
  it.each(ATTACK_IDS)("escapes %j visibly, one field on one line", (id) => {
    const shown = terminalText(id);
    expect(shown).not.toMatch(UNSAFE);
    expect(shown).not.toContain("\n");
  });

  it("shows each escape so that a reader sees what is there", () => {
    expect(terminalText("x\u001b[8m")).toBe("x\\x1b[8m");
    expect(terminalText("a\u202eb\u009b\u007f")).toBe("a\\u{202e}b\\x9b\\x7f");
    expect(terminalText("é ü 日本 emoji 🎉")).toBe("é ü 日本 emoji 🎉");
    expect(terminalMessage("line 1\nline\u001b[2J 2")).toBe("line 1\nline\\x1b[2J 2");
  });

  it("JSON documents: the same values, with every unsafe character as a \\u escape", () => {
    const value = { id: "x\u001b[8m\u202e\u009b\u{e0041}\n", name: "日本" };
    const text = terminalJson(value);
    expect(text).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}]/u);
    expect(JSON.parse(text)).toEqual(value);
  });

  it("a table of attack ids: each on its own row, none able to hide or fake the rest", () => {
    const result: RunResult = {
      operation: "up",
      stack: "prod",
      backendUrl: "file:///x",
      changed: true,
      summary: { create: ATTACK_IDS.length, update: 0, replace: 0, delete: 0, same: 0 },
      groups: ATTACK_IDS.map((id) => ({ resourceName: `default.${id}`, userGroupId: id, change: "create" as const })),
    };
    const table = formatTable(result);
    expect(table).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}]/u);
    expect(table.split("\n")).toHaveLength(1 + ATTACK_IDS.length + 2);
    expect(table).toContain("+ default.x\\x1b[8m");
    const drift = formatDriftTable({ stack: "prod", backendUrl: "file:///x", checked: 1, inSync: false, drift: [{ resourceName: "default.x\u001b[8m", userGroupId: "x", kind: "renamed", detail: 'name "\u202eA" on the service' }] });
    expect(drift).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}]/u);
    expect(drift).toContain("\\u{202e}A");
  });

  it("progress rows escape the group's name; only the printer's own cursor moves reach the terminal", () => {
    for (const terminal of [false, true]) {
      const out: string[] = [];
      const print = progressPrinter((text) => out.push(text), terminal, { total: 2 });
      print(event("default.x\u001b[8m", "create", "started"));
      print(event("default.fake\n  + default.other: create done", "create", "failed"));
      print.finish();
      // Strip the printer's own sequences (erase line, cursor up): nothing unsafe is left.
      const text = out.join("").replace(/\u001b\[(?:2K|\d+A)/g, "");
      expect(text).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}]/u);
      expect(text).toContain("default.x\\x1b[8m");
      expect(text).not.toMatch(/^ {2}\+ default\.other/m);
    }
  });
});

/** A CliIo that records what the command writes; nobody to confirm. */
function recordingIo(): CliIo & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    stdout: (text: string) => {
      io.out += text;
    },
    stderr: (text: string) => {
      io.err += text;
    },
    isTty: false,
    progressIsTty: false,
    env: {},
    confirm: async () => false,
  };
  return io;
}

const scratch = mkdtempSync(path.join(tmpdir(), "cli-output-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;
function groupsFile(content: string): string {
  const file = path.join(scratch, `groups-${++files}.yaml`);
  writeFileSync(file, content);
  return file;
}

describe("main: help, version, usage errors", () => {
  it("prints its version", async () => {
    const io = recordingIo();
    expect(await main(["--version"], io)).toBe(0);
    expect(io.out).toBe(`${(await import("../../package.json")).default.version}\n`);
  });

  it("prints the help of one command, with only the options that go with it", async () => {
    const io = recordingIo();
    expect(await main(["up", "--help"], io)).toBe(0);
    expect(io.out).toMatch(/^Usage: user-groups up --file groups\.yaml \[options\]/);
    expect(io.out).toMatch(/preview, up\s+what would change/);
    const options = io.out.slice(io.out.indexOf("Options:"), io.out.indexOf("\n\n", io.out.indexOf("Options:")));
    expect(options).toMatch(/--yes/);
    expect(options).toMatch(/--force/);
    expect(options).not.toMatch(/--expect-no-changes/);
    expect(io.out).not.toMatch(/drift\s+read every group/);
    const validate = recordingIo();
    await main(["validate", "-h"], validate);
    expect(validate.out).toMatch(/--file/);
    expect(validate.out).not.toMatch(/--stack|--lock-timeout|--backend-url/);
    const general = recordingIo();
    await main(["--help"], general);
    expect(general.out).toMatch(/^Usage: user-groups <preview\|up\|/);
  });

  it("validate --json: its document, with schemaVersion", async () => {
    const file = groupsFile("groups:\n  - { name: A, userGroupId: a }\n");
    const io = recordingIo();
    expect(await main(["validate", "--file", file, "--json"], io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ schemaVersion: 1, file, groups: 1, valid: true });
  });

  it("with --json, a usage error or a bad groups file is one JSON document on stdout, with a stable code", async () => {
    const io = recordingIo();
    expect(await main(["preveiw", "--json"], io)).toBe(2);
    expect(JSON.parse(io.out)).toEqual({ schemaVersion: 1, error: { code: "usage", message: expect.stringMatching(/did you mean preview\?/) } });
    expect(io.err).toMatch(/^user-groups: .*did you mean preview\?\)\nRun user-groups --help for usage\.\n$/);

    const missing = recordingIo();
    expect(await main(["validate", "--file", "/nonexistent/groups.yaml", "--json"], missing)).toBe(2);
    expect(JSON.parse(missing.out).error.code).toBe("usage");

    const refused = recordingIo();
    expect(await main(["up", "--file", "/nonexistent/groups.yaml"], refused)).toBe(2);
    expect(refused.out).toBe("");
  });

  it("refuses an up nobody can confirm, as JSON too", async () => {
    const io = recordingIo();
    expect(await main(["up", "--file", groupsFile("groups: []\n"), "--json"], io)).toBe(2);
    expect(JSON.parse(io.out)).toEqual({ schemaVersion: 1, error: { code: "confirmation_required", message: expect.stringMatching(/without --yes/) } });
  });
});

describe("a lock file's holder, as the CLI describes it", () => {
  it("escapes the host name and time a planted lock file claims, so that they cannot fake lines", () => {
    const text = describeLockHolders(
      [{ file: "/b/.pulumi/locks/x\u001b[8m.json", pid: 4711, hostname: "ci-7\n  all clear: nothing is locked\u001b[2J", timestamp: "2026\u202e-01", alive: undefined }],
      "prod",
      "user-groups recover --stack prod --file groups.yaml",
    )!;
    // One line per holder after the first (the CLI indents them), none from the lock file.
    expect(text.split("\n")).toHaveLength(2);
    expect(text).not.toMatch(/(?!\n)[\p{Cc}\p{Cf}]/u);
    expect(text).toContain('host "ci-7\\x0a  all clear: nothing is locked\\x1b[2J"');
  });
});
