// The Pulumi CLI's version remembered per binary (provider/automation/engine/
// pulumi-cli/known-version.ts): a process that finds the same `pulumi` on PATH
// as an earlier one does not start `pulumi version` again; a replaced binary is
// asked again; what the cache file holds is taken only as a version string.
// A stand-in `pulumi` (a Node script) counts how often it is asked.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { knownCommand } from "../../../provider/automation/engine/pulumi-cli/pulumi-command";
import { pulumiOnPath } from "../../../provider/automation/engine/pulumi-cli/known-version";

const root = mkdtempSync(path.join(os.tmpdir(), "known-version-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const saved = { PATH: process.env.PATH, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME };
let bin: string;
let asked: string;
let cache: string;
let n = 0;

/** A `pulumi` that prints `version` and notes each time it is asked. */
function standIn(version: string): void {
  const file = path.join(bin, "pulumi");
  writeFileSync(file, `#!${process.execPath}\nrequire("node:fs").appendFileSync(${JSON.stringify(asked)}, "asked\\n");\nconsole.log(${JSON.stringify(version)});\n`);
  chmodSync(file, 0o755);
}

const timesAsked = () => {
  try {
    return readFileSync(asked, "utf8").split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
};

beforeEach(() => {
  const dir = path.join(root, `case-${++n}`);
  bin = path.join(dir, "bin");
  cache = path.join(dir, "cache");
  asked = path.join(dir, "asked.log");
  mkdirSync(bin, { recursive: true });
  process.env.PATH = `${bin}${path.delimiter}${saved.PATH ?? ""}`;
  process.env.XDG_CACHE_HOME = cache;
});
afterEach(() => {
  process.env.PATH = saved.PATH;
  if (saved.XDG_CACHE_HOME === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = saved.XDG_CACHE_HOME;
});

describe("the Pulumi CLI's version", () => {
  it("is asked once per binary: a later process (the same lookup again) takes it from the private cache", async () => {
    standIn("v3.259.0");
    const first = await knownCommand(false);
    expect(first.version?.toString()).toBe("3.259.0");
    expect(timesAsked()).toBe(1);
    const again = await knownCommand(false);
    expect(timesAsked()).toBe(1);
    expect(again.command).toBe("pulumi");
    expect(again.version?.toString()).toBe("3.259.0");
    // The Automation API compares it with semver's methods.
    expect(again.version?.compare("3.95.0")).toBe(1);
    const file = path.join(cache, "pulumi-user-groups", "engine", "pulumi-versions.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
  });

  it("is asked again once the binary changes (an upgrade in place)", async () => {
    standIn("v3.259.0");
    await knownCommand(false);
    standIn("v3.260.0");
    utimesSync(path.join(bin, "pulumi"), new Date(), new Date(Date.now() + 5_000));
    expect((await knownCommand(false)).version?.toString()).toBe("3.260.0");
    expect(timesAsked()).toBe(2);
  });

  it("is not remembered when the SDK's check was skipped, nor taken from a cache entry that is not a version", async () => {
    standIn("v3.259.0");
    await knownCommand(true);
    await knownCommand(false);
    expect(timesAsked()).toBe(2);
    const file = path.join(cache, "pulumi-user-groups", "engine", "pulumi-versions.json");
    const entries = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
    writeFileSync(file, JSON.stringify(Object.fromEntries(Object.keys(entries).map((key) => [key, "3.259.0; rm -rf /"]))));
    expect((await knownCommand(false)).version?.toString()).toBe("3.259.0");
    expect(timesAsked()).toBe(3);
  });

  it("is never remembered for a PATH with a relative entry (the working directory's `pulumi` may be another one)", () => {
    standIn("v3.259.0");
    expect(pulumiOnPath(`${bin}${path.delimiter}${saved.PATH}`)).toBe(path.join(bin, "pulumi"));
    expect(pulumiOnPath(`.${path.delimiter}${bin}`)).toBeUndefined();
    expect(pulumiOnPath(`${path.delimiter}${bin}`)).toBeUndefined();
  });
});
