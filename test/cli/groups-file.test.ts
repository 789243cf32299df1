// A groups file is untrusted input (a pull request controls it): bounded and
// refused early, every error naming the file and the entry; `validate` checks
// one offline; the JSON Schema shipped for editors is the zod schema's.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { groupsFileJsonSchema } from "../../provider/automation/model/groups-json-schema";
import { GroupsValidationError } from "../../provider/automation/model/groups-spec";
import { MAX_GROUPS_FILE_BYTES, readGroupsFile } from "../../provider/cli/groups-file";
import { UsageError } from "../../provider/cli/args";
import { REPO_ROOT } from "../support/pulumi-env";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

const dir = mkdtempSync(path.join(tmpdir(), "groups-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const target = path.join(dir, name);
  writeFileSync(target, content);
  return target;
}

/** Nine levels of nine aliases: 489 bytes that stand for 9^9 strings once expanded. */
function billionLaughs(): string {
  const lines = ["groups:", "  - name: lol", "    userGroupId: lol", "    properties:", `      a: &a [${Array(9).fill('"lol"').join(",")}]`];
  let previous = "a";
  for (const level of "bcdefghi") {
    lines.push(`      ${level}: &${level} [${Array(9).fill(`*${previous}`).join(",")}]`);
    previous = level;
  }
  const body = `${lines.join("\n")}\n`;
  return `${"# a billion laughs".padEnd(489 - body.length - 1, ".")}\n${body}`;
}

describe("readGroupsFile", () => {
  it("refuses the 489-byte billion-laughs file at once, naming the file", () => {
    const bomb = file("bomb.yaml", billionLaughs());
    expect(readFileSync(bomb).length).toBe(489);
    const started = process.hrtime.bigint();
    expect(() => readGroupsFile(bomb)).toThrow(UsageError);
    expect(() => readGroupsFile(bomb)).toThrow(`${bomb}: YAML anchors and aliases are not accepted (anchor "&a"`);
    // Refused before any expansion (the old path spent ~20 s and 570 MB serializing it): far under a second.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1_000);
  });

  it.each([
    ["an anchor on a scalar", "groups:\n  - name: &n A\n    userGroupId: a\n"],
    ["a merge key", "base: &b { name: x }\ngroups:\n  - { <<: *b, userGroupId: a }\n"],
    ["an anchor on a block mapping", "groups:\n  - &g\n    name: A\n    userGroupId: a\n"],
  ])("refuses %s", (_what, content) => {
    expect(() => readGroupsFile(file("anchor.yaml", content))).toThrow(/anchors and aliases are not accepted/);
  });

  it("accepts & and * inside values", () => {
    const groups = readGroupsFile(file("amp.yaml", 'groups:\n  - name: "R&D *team*"\n    userGroupId: r&d\n    properties: { note: "a * b & c" }\n'));
    expect(groups).toEqual([{ name: "R&D *team*", userGroupId: "r&d", properties: { note: "a * b & c" } }]);
  });

  it("refuses a file over 16 MiB without reading it", () => {
    const big = file("big.yaml", "");
    truncateSync(big, MAX_GROUPS_FILE_BYTES + 1); // sparse: reading it would cost 16 MiB of zeros
    expect(() => readGroupsFile(big)).toThrow(`${big}: ${MAX_GROUPS_FILE_BYTES + 1} bytes is over the limit of ${MAX_GROUPS_FILE_BYTES} bytes (16 MiB)`);
  });

  it("reads a file of exactly the limit, refuses one byte more: the read itself is bounded", () => {
    const padded = (size: number) => {
      const head = "groups:\n  - { name: A, userGroupId: a }\n";
      return file(`pad-${size}.yaml`, head + "#".repeat(size - head.length - 1) + "\n");
    };
    expect(readGroupsFile(padded(MAX_GROUPS_FILE_BYTES))).toHaveLength(1);
    expect(() => readGroupsFile(padded(MAX_GROUPS_FILE_BYTES + 1))).toThrow(/over the limit of 16777216 bytes \(16 MiB\) for a groups file/);
  });

  it("refuses a symlink (git commits them), even to a regular file, naming the file", () => {
    const real = file("real.yaml", "groups:\n  - { name: A, userGroupId: a }\n");
    const link = path.join(dir, "link.yaml");
    symlinkSync(real, link);
    expect(() => readGroupsFile(link)).toThrow(UsageError);
    expect(() => readGroupsFile(link)).toThrow(`${link}: is a symbolic link; a groups file must be a regular file`);
  });

  it("refuses a device, a directory and a missing file, each by name", () => {
    expect(() => readGroupsFile("/dev/zero")).toThrow("/dev/zero: is a character device; a groups file must be a regular file");
    expect(() => readGroupsFile(dir)).toThrow(`${dir}: is a directory`);
    expect(() => readGroupsFile(path.join(dir, "absent.yaml"))).toThrow(/absent\.yaml: no such file/);
  });

  it("refuses a group whose properties serialize to more than 1 MiB, naming the entry", () => {
    const huge = JSON.stringify({ blob: "x".repeat(1024 * 1024) });
    const target = file("huge.yaml", `groups:\n  - { name: A, userGroupId: a }\n  - { name: B, userGroupId: b, properties: ${huge} }\n`);
    const error = (() => {
      try {
        readGroupsFile(target);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(GroupsValidationError);
    expect((error as Error).message).toContain(target);
    expect((error as Error).message).toMatch(/groups\[1\] \(userGroupId "b"\): properties: 1048587 bytes serialized, over the limit of 1048576 \(1 MiB\)/);
  });
});

describe("user-groups validate", () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [USER_GROUPS_CLI, ...args], {
      // No credentials, no passphrase, no engine on PATH: validate needs none of them.
      env: { PATH: path.dirname(process.execPath) },
      encoding: "utf8",
    });

  it("checks 5000 groups offline", () => {
    const groups = Array.from({ length: 5000 }, (_, i) => `  - { name: "Customer ${i}", userGroupId: c-${i}, mapping: { sales: eu }, properties: { seats: ${i} } }`);
    const run = cli("validate", "--file", file("fleet.yaml", `groups:\n${groups.join("\n")}\n`));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/fleet\.yaml: 5000 groups, valid/);
  });

  // The attacks of issue 23: each used to read until 4 GB (a symlink to /dev/zero) or hang (a FIFO).
  it("refuses a symlink to /dev/zero and a FIFO at once (exit 2), never reading them", () => {
    const zero = path.join(dir, "zero.yaml");
    symlinkSync("/dev/zero", zero);
    const fifo = path.join(dir, "fifo.yaml");
    execFileSync("mkfifo", [fifo]);
    for (const [target, message] of [
      [zero, "is a symbolic link"],
      [fifo, "is a FIFO (named pipe); a groups file must be a regular file"],
    ] as const) {
      // A hang or an endless read would meet the timeout (and a signal instead of exit 2).
      const run = spawnSync(process.execPath, [USER_GROUPS_CLI, "validate", "--file", target], { env: { PATH: path.dirname(process.execPath) }, encoding: "utf8", timeout: 60_000 });
      expect(run.signal, target).toBeNull();
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain(`${target}: ${message}`);
    }
  });

  it("a misspelt key gets the key it is closest to, as a misspelt command or option does (#41 item 5)", () => {
    const typos = file("typos.yaml", "groups:\n  - { nmae: Acme, userGroupId: acme }\n  - { name: Globex, userGroupID: globex, colour: red }\n");
    const run = cli("validate", "--file", typos);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('groups[0] (userGroupId "acme"): the group has an unknown key "nmae" (did you mean name?)');
    // Several keys: each close one named; a key close to none (colour) is listed without a guess.
    expect(run.stderr).toContain('groups[1]: the group has unknown keys "userGroupID", "colour" (did you mean userGroupId for "userGroupID"?)');
    const top = cli("validate", "--file", file("top.yaml", "group:\n  - { name: Acme, userGroupId: acme }\n"));
    expect(top.status).toBe(2);
    expect(top.stderr).toContain(`${path.join(dir, "top.yaml")}: must hold one object with a "groups" list, and nothing else (did you mean groups for "group"?)`);
  });

  it("exits 2 naming the file and the entry", () => {
    const bad = file("bad.yaml", "groups:\n  - { name: A, userGroupId: a }\n  - { name: B, userGroupId: a }\n");
    const run = cli("validate", "--file", bad);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${bad}: 1 problem`);
    expect(run.stderr).toMatch(/groups\[1\] \(userGroupId "a"\): duplicate userGroupId/);
  });
});

describe("the JSON Schema of a groups file", () => {
  it("is shipped up to date in schema/groups.schema.json (written by npm run schema)", () => {
    const shipped = JSON.parse(readFileSync(path.join(REPO_ROOT, "schema/groups.schema.json"), "utf8")) as unknown;
    expect(shipped).toEqual(groupsFileJsonSchema());
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { files: string[] };
    expect(pkg.files).toContain("schema");
  });

  it("describes what the zod schema accepts: required fields, no unknown ones", () => {
    const schema = groupsFileJsonSchema() as { required: string[]; properties: { groups: { items: { required: string[]; additionalProperties: boolean } } } };
    expect(schema.required).toEqual(["groups"]);
    expect(schema.properties.groups.items.required).toEqual(["name", "userGroupId"]);
    expect(schema.properties.groups.items.additionalProperties).toBe(false);
  });
});
