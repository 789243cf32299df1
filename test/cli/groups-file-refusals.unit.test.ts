// What a groups file that cannot be applied is refused with, read as `up` reads it
// (readGroupsFile): each message names the file and the entry. The command's exit
// code, its stderr and that nothing reaches the service: test/cli/cli.test.ts
// (one of these files through `user-groups up`).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readGroupsFile } from "../../provider/cli/groups-file";

const dir = mkdtempSync(path.join(tmpdir(), "groups-file-refusals-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a groups file refused before any run", () => {
  it.each([
    ["malformed YAML", "groups: [ { name: x", /not valid YAML or JSON/],
    ["no groups list", "name: x\n", /must hold one object with a "groups" list/],
    ["a duplicate id", "groups:\n  - { name: A, userGroupId: a }\n  - { name: B, userGroupId: a }\n", /groups\[1\] \(userGroupId "a"\): duplicate userGroupId under profile "default" \(also groups\[0\]\)/],
    ["a bad field", "groups:\n  - { name: A, userGroupId: a }\n  - { name: '  ', userGroupId: b, color: red }\n", /groups\[1\] \(userGroupId "b"\): name must not be blank[\s\S]*the group has an unknown key "color"/],
  ])("refuses %s, naming the file and the entry", (what, content, message) => {
    const bad = path.join(dir, `${what.replace(/\W+/g, "-")}.yaml`);
    writeFileSync(bad, content);
    let thrown: unknown;
    try {
      readGroupsFile(bad);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).message).toContain(bad);
    expect((thrown as Error).message).toMatch(message);
  });
});
