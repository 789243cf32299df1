// The engine scripts/ensure-pulumi builds carries one change of a dependency's start-up
// (scripts/pulumi-engine/README.md, "Lazy password dictionaries"): zxcvbn-go's word
// lists are built on first use, not in package init. Held here on the engine this run
// uses, when ensure-pulumi built it (its recipe mark beside the binary); a pulumi of
// the user's own is used as it is, and then there is nothing of ours to check.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { createPulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";

const run = promisify(execFile);
const env = createPulumiTestEnv("engine-build");
afterAll(() => env.cleanup());
const pulumi = path.join(env.binDir, "pulumi");
const mark = path.join(env.binDir, ".pulumi-user-groups-engine");
const ours = existsSync(mark);

describe.skipIf(!ours)("the engine ensure-pulumi built", () => {
  it("is built from the recipe in this checkout", () => {
    const recipe = createHash("sha256");
    for (const file of ["go.mod", "go.sum", "lazy-zxcvbn"]) recipe.update(readFileSync(path.join(REPO_ROOT, "scripts/pulumi-engine", file)));
    expect(readFileSync(mark, "utf8").trim()).toBe(recipe.digest("hex"));
  });

  it("builds no password dictionary when it starts (Go's init trace: a few bytes, not megabytes)", async () => {
    const { stdout, stderr } = await run(pulumi, ["version"], { env: { ...process.env, ...env.envVars, GODEBUG: "inittrace=1" } });
    expect(stdout.trim()).toMatch(/^v3\./);
    // "init github.com/nbutton23/zxcvbn-go/frequency @2.1 ms, 0.01 ms clock, 48 bytes, 1 allocs"
    const inits = [...stderr.matchAll(/^init (github\.com\/\S+\/zxcvbn-go\/\S+) @.*?, (\d+) bytes, \d+ allocs$/gm)];
    const packages = new Map(inits.map((m) => [m[1]!, Number(m[2])]));
    for (const fork of ["nbutton23", "ccojocar"]) {
      for (const pkg of ["frequency", "matching"]) {
        // Unpatched, frequency allocates about 10 MB and matching about 8 MB here.
        expect(packages.get(`github.com/${fork}/zxcvbn-go/${pkg}`), `${fork}/${pkg}`).toBeLessThan(64 * 1024);
      }
    }
  });

  it("still scores a config value with its dictionaries: `config set` refuses a random-looking password and takes a dictionary one", async () => {
    writeFileSync(path.join(env.workDir, "Pulumi.yaml"), "name: engine-build\nruntime: yaml\n");
    const inWork = { cwd: env.workDir, env: { ...process.env, ...env.envVars } };
    await run(pulumi, ["stack", "init", "dev", "--non-interactive"], inWork);
    const refused = await run(pulumi, ["config", "set", "dbPassword", "x9$Kq!mZ2#vLp8@w", "--non-interactive"], inWork).then(
      () => undefined,
      (error: { stderr?: string }) => error.stderr ?? "",
    );
    expect(refused).toContain("looks like a secret");
    // Without its word lists zxcvbn scores this 72.7 bits, 4.5 per character: a secret by the CLI's rule
    // (40 bits at 3 per character). With them it is two known words, 7.9 bits, taken as plain text.
    await run(pulumi, ["config", "set", "dbPassword", "sunshinejennifer", "--non-interactive"], inWork);
    const { stdout } = await run(pulumi, ["config", "get", "dbPassword", "--non-interactive"], inWork);
    expect(stdout.trim()).toBe("sunshinejennifer");
  });
});

describe("the dynamic-provider launcher ensure-pulumi installs (scripts/pulumi-engine/pulumi-resource-pulumi-nodejs)", () => {
  const launcher = path.join(REPO_ROOT, "scripts/pulumi-engine/pulumi-resource-pulumi-nodejs");
  // A `node` that records how it was called and answers `-e` as require.resolve would fail to.
  const stubDir = mkdtempSync(path.join(tmpdir(), "launcher-"));
  afterAll(() => rmSync(stubDir, { recursive: true, force: true }));
  const calls = path.join(stubDir, "calls");
  writeFileSync(path.join(stubDir, "node"), `#!/bin/sh\necho "$*" >> "${calls}"\n`);
  chmodSync(path.join(stubDir, "node"), 0o755);
  const launch = async (cwd: string) => {
    rmSync(calls, { force: true });
    await run("sh", [launcher, "--port", "1234"], { cwd, env: { ...process.env, PATH: `${stubDir}:${process.env.PATH ?? ""}` } });
    return readFileSync(calls, "utf8").trim().split("\n");
  };

  it.skipIf(!ours)("is the one ensure-pulumi put beside the engine it built", () => {
    expect(readFileSync(path.join(env.binDir, "pulumi-resource-pulumi-nodejs"), "utf8")).toBe(readFileSync(launcher, "utf8"));
  });

  it("starts Node.js once, on the host that require.resolve finds from a parent's node_modules", async () => {
    const deep = path.join(REPO_ROOT, ".work", "launcher-cwd", "a", "b");
    mkdirSync(deep, { recursive: true });
    const host = path.join(realpathSync(REPO_ROOT), "node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js");
    expect(await launch(deep)).toEqual([`${host} --port 1234`]);
    // The same file Node.js itself resolves from there.
    const { stdout } = await run(process.execPath, ["-e", "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))"], { cwd: deep });
    expect(stdout.trim()).toBe(host);
  });

  it("runs the host by its real path where node_modules holds a link to the package, as require.resolve answers", async () => {
    // The host finds its own modules (its grpc-js, which the provider's tracing instruments) from that path.
    const linked = path.join(REPO_ROOT, ".work", "launcher-link");
    rmSync(linked, { recursive: true, force: true });
    mkdirSync(path.join(linked, "node_modules", "@pulumi"), { recursive: true });
    symlinkSync(path.join(REPO_ROOT, "node_modules/@pulumi/pulumi"), path.join(linked, "node_modules/@pulumi/pulumi"));
    const deep = path.join(linked, "program");
    mkdirSync(deep, { recursive: true });
    const { stdout } = await run(process.execPath, ["-e", "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))"], { cwd: deep });
    expect(await launch(deep)).toEqual([`${stdout.trim()} --port 1234`]);
    expect(stdout.trim()).toBe(realpathSync(path.join(REPO_ROOT, "node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js")));
  });

  it("asks Node.js, as Pulumi's own script does, where the usual layout is not found", async () => {
    const nowhere = mkdtempSync(path.join(tmpdir(), "no-modules-"));
    try {
      expect(await launch(nowhere)).toEqual(["-e console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))"]);
    } finally {
      rmSync(nowhere, { recursive: true, force: true });
    }
  });
});
