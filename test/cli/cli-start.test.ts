// What the `user-groups` command loads before it does anything: `--help`, `validate`
// and the refusal of a bad groups file load neither @pulumi/pulumi nor OpenTelemetry
// nor the HTTP client, so they start in a fraction of an engine command's time (1100
// modules and ~1.3 s of CPU before, ~200 modules and ~0.3 s now: docs/performance.md).
// Read from the module list of a real child process, so the saving cannot silently
// come back through an import added somewhere on the way.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "cli-start-"));
  // Preloaded: writes the files of every CommonJS module the process loaded when it exits.
  writeFileSync(
    path.join(dir, "probe.cjs"),
    'process.on("exit", () => require("node:fs").writeFileSync(process.env.PROBE_OUT, JSON.stringify(Object.keys(require.cache))));\n',
  );
  writeFileSync(path.join(dir, "bad.yaml"), "groups:\n  - userGroupId: acme\n    nmae: Acme\n");
  writeFileSync(path.join(dir, "good.yaml"), "groups:\n  - name: Acme\n    userGroupId: acme\n");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly loaded: readonly string[];
}

let runs = 0;

function start(args: readonly string[], extraEnv: Record<string, string> = {}): Promise<Started> {
  const out = path.join(dir, `loaded-${++runs}.json`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("OTEL_") || name.startsWith("PULUMI_CONFIG_PASSPHRASE")) delete env[name];
  Object.assign(env, { PROBE_OUT: out, PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`, GITHUB_STEP_SUMMARY: "" }, extraEnv);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--require", path.join(dir, "probe.cjs"), USER_GROUPS_CLI, ...args], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, loaded: JSON.parse(readFileSync(out, "utf8")) as string[] }));
  });
}

/** The heavy parts an engine command needs, and the command's own modules that use them, found in a module list. */
function heavyIn(loaded: readonly string[]): string[] {
  const heavy = /[\\/]node_modules[\\/](@pulumi[\\/]pulumi|@opentelemetry[\\/][^\\/]+|undici|pg|@grpc[\\/]grpc-js)[\\/]|[\\/]dist[\\/]provider[\\/](automation[\\/](engine|operations|fleet|shards|lease)|client[\\/]http-client|resource[\\/]user-group\.|cli[\\/](engine-commands|telemetry-setup))/;
  return [...new Set(loaded.map((file) => heavy.exec(file)?.[0]).filter((match): match is string => match !== undefined))].sort();
}

describe("user-groups start-up", () => {
  it("refuses a bad groups file without loading @pulumi/pulumi, OpenTelemetry or the HTTP client, telemetry asked for or not", async () => {
    const telemetryOn: Record<string, string> = { OTEL_TRACES_EXPORTER: "console", OTEL_METRICS_EXPORTER: "none" };
    for (const extraEnv of [{}, telemetryOn]) {
      const run = await start(["preview", "--file", "bad.yaml", "--stack", "dev"], extraEnv);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/bad\.yaml: 2 problems in the groups, nothing was changed:\n {2}- groups\[0\] \(userGroupId "acme"\): name is required/);
      expect(heavyIn(run.loaded)).toEqual([]);
      // An engine command loads over 1000 (below): the bound has a wide margin either way.
      expect(run.loaded.length).toBeLessThan(400);
    }
  });

  it("answers --help, --version and validate without them", async () => {
    const help = await start(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: user-groups/m);
    const version = await start(["--version"]);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    const valid = await start(["validate", "--file", "good.yaml", "--json"]);
    expect(JSON.parse(valid.stdout)).toMatchObject({ groups: 1, valid: true });
    for (const run of [help, version, valid]) {
      expect(heavyIn(run.loaded)).toEqual([]);
      expect(run.loaded.length).toBeLessThan(400);
    }
  });

  // The probe sees what an engine command loads: the checks above can fail.
  it("loads the automation layer and @pulumi/pulumi once an engine command starts", async () => {
    const run = await start(["preview", "--file", "good.yaml", "--stack", "dev"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/No passphrase for the stack's secrets/);
    expect(heavyIn(run.loaded)).toEqual(expect.arrayContaining([expect.stringMatching(/@pulumi[\\/]pulumi/), expect.stringMatching(/engine-commands/)]));
    expect(run.loaded.length).toBeGreaterThan(800);
  });
});
