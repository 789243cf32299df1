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
      json: false,
      showSecrets: false,
      expectNoChanges: false,
      parallel: 4,
    });
  });

  it("reads recover, which goes with --file and --stack like up", () => {
    expect(parseCliArgs(["recover", "--file", "g.yaml", "-s", "prod", "-y"])).toMatchObject({ operation: "recover", file: "g.yaml", stack: "prod", yes: true });
  });

  it.each([
    [["deploy", "--file", "g.yaml"], /one of preview, up, refresh, destroy, recover, not "deploy"/],
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

  it("redraws a task list in place on a terminal", () => {
    const out: string[] = [];
    const print = progressPrinter((text) => out.push(text), true);
    print(event("default.acme", "create", "started"));
    print(event("default.globex", "delete", "started"));
    print(event("default.acme", "create", "done"));
    expect(out[0]).toBe("\u001b[2K  + default.acme: create ...\n");
    expect(out[1]).toBe("\u001b[1A\u001b[2K  + default.acme: create ...\n\u001b[2K  - default.globex: delete ...\n");
    expect(out[2]).toBe("\u001b[2A\u001b[2K  + default.acme: create done\n\u001b[2K  - default.globex: delete ...\n");
  });
});

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
});
