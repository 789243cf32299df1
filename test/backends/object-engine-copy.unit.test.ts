// The engine's private copy on an object store (provider/backends/object-engine-copy.ts):
// the commit mark (appended as text, never the checkpoint re-serialised), and a
// copy directory named by the environment that is not private is refused.
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CommandError } from "@pulumi/pulumi/automation";
import { translateEngineError } from "../../provider/automation/engine/pulumi-cli";
import { commitCopy, isEngineCopyUrl, markedCheckpoint } from "../../provider/backends/object-engine-copy";
import type { ObjectClient } from "../../provider/backends";

describe("markedCheckpoint", () => {
  it("appends the mark as the last field, replacing an older one, keeping every byte of the checkpoint", () => {
    const checkpoint = '{"version":3,"checkpoint":{"n":12345678901234567890123}}\n';
    const once = markedCheckpoint(checkpoint, 2, 0);
    expect(once).toBe('{"version":3,"checkpoint":{"n":12345678901234567890123},"userGroupsCommit":{"epoch":2,"seq":0}}\n');
    const twice = markedCheckpoint(once, 3, 7);
    expect(twice).toBe('{"version":3,"checkpoint":{"n":12345678901234567890123},"userGroupsCommit":{"epoch":3,"seq":7}}\n');
    expect(JSON.parse(twice)).toMatchObject({ version: 3, userGroupsCommit: { epoch: 3, seq: 7 } });
    // Two commits never have the same bytes (S3's ETag is their hash): the epoch and sequence differ.
    expect(markedCheckpoint(checkpoint, 2, 1)).not.toBe(once);
    expect(markedCheckpoint("{}", 1, 0)).toBe('{"userGroupsCommit":{"epoch":1,"seq":0}}\n');
  });

  it("refuses what is not one JSON object", () => {
    expect(() => markedCheckpoint("[1,2]", 1, 0)).toThrow(/not a JSON object/);
    expect(() => markedCheckpoint("", 1, 0)).toThrow(/not a JSON object/);
  });
});

describe("commitCopy", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const noStore = {} as ObjectClient;

  it("refuses a copy directory others can read or write (the environment names it), and a relative one", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "copy-attack-"));
    dirs.push(dir);
    writeFileSync(path.join(dir, "commit.json"), "{}");
    chmodSync(dir, 0o777);
    await expect(commitCopy(noStore, dir)).rejects.toMatchObject({ code: "backend_url_invalid" });
    chmodSync(dir, 0o700);
    await expect(commitCopy(noStore, path.relative(process.cwd(), dir))).rejects.toMatchObject({ code: "backend_url_invalid" });
    await expect(commitCopy(noStore, `${dir}/../${path.basename(dir)}`)).rejects.toMatchObject({ code: "backend_url_invalid" });
  });
});

describe("commitCopy's state file", () => {
  it("refuses a checkpoint key that would leave the copy (a state file tampered with)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "copy-key-"));
    try {
      chmodSync(dir, 0o700);
      writeFileSync(path.join(dir, "commit.json"), JSON.stringify({ key: ".pulumi/stacks/../../../etc/passwd.json", epoch: 1, seq: 0, sent: "", history: [] }));
      await expect(commitCopy({} as ObjectClient, dir)).rejects.toThrow();
      expect(existsSync(path.join(dir, "commit.lock"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("an engine read whose private copy was removed under it", () => {
  const failed = (stderr: string) => new (CommandError as unknown as new (result: unknown) => CommandError)({ stdout: "", stderr, code: 255, err: undefined, toString: () => stderr });

  it("is backend_unreachable (ask again), not backend_not_found; a missing backend of the user's stays backend_not_found", () => {
    const gone = 'error: unable to open state directory "file:///tmp/user-groups-copy-2l2oET/backend": stat /tmp/user-groups-copy-2l2oET/backend: no such file or directory';
    expect(isEngineCopyUrl("file:///tmp/user-groups-copy-2l2oET/backend")).toBe(true);
    expect(translateEngineError(failed(gone), "prod")).toMatchObject({ code: "backend_unreachable" });
    const theirs = 'error: unable to open state directory "file:///srv/state": stat /srv/state: no such file or directory';
    expect(isEngineCopyUrl("file:///srv/user-groups-copy-2l2oET/elsewhere")).toBe(false);
    expect(translateEngineError(failed(theirs), "prod")).toMatchObject({ code: "backend_not_found" });
  });
});
