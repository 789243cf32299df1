// Which torn stack sidecars the next run removes (provider/automation/backend/
// torn-sidecars.ts): only one that stays torn for the whole wait, on the clock (a
// fake clock's sleep is the moment a live writer rewrites it, or does not); a
// whole one, another stack's and a backup's are never touched.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeLingeringTornSidecars } from "../../../provider/backends/file/torn-sidecars";
import { clockWith } from "../../../provider/clock";

const root = mkdtempSync(path.join(os.tmpdir(), "torn-sidecars-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function backend(name: string): { dir: string; stacks: string } {
  const dir = path.join(root, name);
  const stacks = path.join(dir, ".pulumi", "stacks", "user-groups");
  mkdirSync(stacks, { recursive: true });
  writeFileSync(path.join(stacks, "s.json.attrs"), "");
  writeFileSync(path.join(stacks, "s.json.bak.attrs"), '{"user.cache_control":""}');
  writeFileSync(path.join(stacks, "other.json.attrs"), "");
  return { dir, stacks };
}

describe("a torn stack sidecar", () => {
  it("is left alone when its writer rewrites it during the wait", async () => {
    const { dir, stacks } = backend("live");
    const slept: number[] = [];
    // The live writer finishes its write while the run waits.
    const clock = clockWith({ sleep: async (ms) => void (slept.push(ms), writeFileSync(path.join(stacks, "s.json.attrs"), "{}")) });
    expect(await removeLingeringTornSidecars(dir, "user-groups", "s", 5_000, clock)).toEqual([]);
    expect(slept).toEqual([5_000]);
    expect(readFileSync(path.join(stacks, "s.json.attrs"), "utf8")).toBe("{}");
  });

  it("is removed when it stays torn for the whole wait; a backup's and another stack's are never touched", async () => {
    const { dir, stacks } = backend("dead");
    const slept: number[] = [];
    const clock = clockWith({ sleep: async (ms) => void slept.push(ms) });
    expect(await removeLingeringTornSidecars(dir, "user-groups", "s", 5_000, clock)).toEqual([path.join(stacks, "s.json.attrs")]);
    expect(slept).toEqual([5_000]);
    expect(readFileSync(path.join(stacks, "s.json.bak.attrs"), "utf8")).toContain("cache_control");
    expect(readFileSync(path.join(stacks, "other.json.attrs"), "utf8")).toBe(""); // another stack's
  });

  it("nothing torn: no wait at all", async () => {
    const { dir, stacks } = backend("whole");
    writeFileSync(path.join(stacks, "s.json.attrs"), "{}");
    const slept: number[] = [];
    expect(await removeLingeringTornSidecars(dir, "user-groups", "s", 5_000, clockWith({ sleep: async (ms) => void slept.push(ms) }))).toEqual([]);
    expect(slept).toEqual([]);
  });
});
