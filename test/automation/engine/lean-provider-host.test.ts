// The provider preload's start-up saving (provider/lean-provider-host.ts): Pulumi's
// dynamic-provider host started with the preload (as every engine run of ours
// starts it) loads neither TypeScript's compiler nor npm's Arborist; where the
// closure serializer is used after all, both are loaded then and work.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/pulumi-env";

const PRELOAD = path.join(REPO_ROOT, "dist/provider/telemetry-preload.js");
const LEAN_HOST = path.join(REPO_ROOT, "dist/provider/lean-provider-host.js");
const HOST_MAIN = require.resolve("@pulumi/pulumi/cmd/dynamic-provider/index.js", { paths: [REPO_ROOT] });
const DEFERRED = String.raw`node_modules[\\/](typescript|@npmcli[\\/]arborist)[\\/]`;

// Under the repository: the scripts resolve @pulumi/pulumi from where they are.
mkdirSync(path.join(REPO_ROOT, ".work"), { recursive: true, mode: 0o700 });
const dir = mkdtempSync(path.join(REPO_ROOT, ".work", "lean-host-")); // 0700
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

const PROBE = script(
  "probe.js",
  `process.on("exit", () => {
     const loaded = Object.keys(require.cache);
     process.stderr.write("PROBE " + JSON.stringify({ modules: loaded.length, deferred: loaded.filter((f) => new RegExp(${JSON.stringify(DEFERRED)}).test(f)) }) + "\\n");
   });`,
);

interface Probe {
  readonly modules: number;
  readonly deferred: string[];
}

/** Pulumi's dynamic-provider host, started as the engine starts it but with no engine to talk to: it loads everything, then exits. */
function hostStart(preload: readonly string[]): Probe {
  const result = spawnSync(process.execPath, [...preload, "--require", PROBE, HOST_MAIN], { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
  const line = result.stderr.split("\n").find((l) => l.startsWith("PROBE "));
  if (!line) throw new Error(`the host printed no probe line: ${result.stderr.slice(0, 500)}`);
  return JSON.parse(line.slice("PROBE ".length)) as Probe;
}

describe("the provider preload in Pulumi's dynamic-provider host", () => {
  it("leaves TypeScript and Arborist unloaded, where the host without it loads both", () => {
    const without = hostStart([]);
    const lean = hostStart(["--require", PRELOAD]);
    expect(without.deferred.some((f) => /typescript/.test(f))).toBe(true);
    expect(without.deferred.some((f) => /arborist/.test(f))).toBe(true);
    expect(lean.deferred).toEqual([]);
    // Pacote, sigstore and the rest came with Arborist: well under two thirds of the modules remain.
    expect(lean.modules).toBeLessThan(without.modules * 0.66);
  });

  it("still serializes a function and computes code paths, loading each module at its first use", () => {
    const check = script(
      "serialize.js",
      `require(${JSON.stringify(LEAN_HOST)}).deferClosureSerializerModules();
       const pulumi = require("@pulumi/pulumi");
       const loaded = (name) => Object.keys(require.cache).some((f) => new RegExp("node_modules[\\\\\\\\/]" + name + "[\\\\\\\\/]").test(f));
       (async () => {
         const before = { ts: loaded("typescript"), arborist: loaded("@npmcli[\\\\\\\\/]arborist") };
         const answer = 42;
         const serialized = await pulumi.runtime.serializeFunction(function () { return answer; });
         const afterSerialize = loaded("typescript");
         const paths = await pulumi.runtime.computeCodePaths({ extraIncludePackages: ["semver"] });
         console.log(JSON.stringify({ before, afterSerialize, afterPaths: loaded("@npmcli[\\\\\\\\/]arborist"), text: serialized.text, paths: paths.size }));
       })().catch((e) => { console.error(e); process.exit(1); });`,
    );
    const result = spawnSync(process.execPath, [check], { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
    expect(result.status, result.stderr).toBe(0);
    const seen = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { before: { ts: boolean; arborist: boolean }; afterSerialize: boolean; afterPaths: boolean; text: string; paths: number };
    expect(seen.before).toEqual({ ts: false, arborist: false });
    expect(seen.text).toContain("answer");
    expect(seen.afterSerialize).toBe(true);
    expect(seen.afterPaths).toBe(true);
    expect(seen.paths).toBeGreaterThan(0);
  });
});
