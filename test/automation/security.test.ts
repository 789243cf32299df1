// Issue #15, items 1-4 and 7: no key on a command line or in an error, no
// planted provider code, private work directories, stack names that cannot
// reach a path, and a demo that never protects real credentials with the
// public demo passphrase.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PLANTED_PLUGIN_VERSION, servePlantedPlugin } from "../support/planted-plugin";
import { REPO_ROOT } from "../support/pulumi-env";
import { useStackFixture } from "../support/stack-fixture";
import { runUserGroupsCli, USER_GROUPS_CLI } from "../support/user-groups-cli";
import { commandLine } from "../../testkit/kill-tree";

type AutomationModule = typeof import("../../provider/automation");
type WorkspaceModule = typeof import("../../provider/automation/engine/workspace");
type CliModule = typeof import("../../provider/cli/user-groups");
// As a service loads it: the built package.
const load = createRequire(path.join(REPO_ROOT, "package.json"));
const automation = load("pulumi-user-groups/automation") as AutomationModule;
const workspace = load(path.join(REPO_ROOT, "dist/provider/automation/engine/workspace.js")) as WorkspaceModule;
const cliModule = load(USER_GROUPS_CLI) as CliModule;

const KEY = "security-config-key-0001";
const { server, env, envVars: envVarsWith } = useStackFixture({ label: "security", apiKeys: [KEY] });

function modeOf(file: string): string {
  return (statSync(file).mode & 0o777).toString(8);
}

describe("1. no key on a command line, none in an error", () => {
  /** A `pulumi` first on PATH that records its arguments, then runs the real one. */
  function recordingPulumi(): { dir: string; log: string } {
    const dir = path.join(env.workDir, "recording-bin");
    const log = path.join(env.workDir, "pulumi-argv.log");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${path.join(env.binDir, "pulumi")}' "$@"\n`, { mode: 0o755 });
    return { dir, log };
  }

  function options(stack: string, passphrase: string, pathDir: string) {
    const { PULUMI_CONFIG_PASSPHRASE: _fromEnv, ...envVars } = env.envVars;
    return {
      stack,
      workDir: path.join(env.workDir, "groups"),
      passphrase,
      envVars: { ...envVars, PULUMI_BACKEND_URL: "", PATH: `${pathDir}${path.delimiter}${env.envVars.PATH}` },
      config: { "user-groups:baseUrl": { value: server.url }, "user-groups:apiKey": { value: KEY, secret: true } },
      groups: [{ name: "From config", userGroupId: "from-config" }],
    };
  }

  it("sets secret config through stdin: the provider gets the key, no pulumi command line carries it", async () => {
    const { dir, log } = recordingPulumi();
    const result = await automation.provisionUserGroups(options("config", "right-passphrase", dir));
    expect(result.summary.create).toBe(1);
    expect(server.groups().map((g) => g.user_group_id)).toEqual(["from-config"]);
    const argv = readFileSync(log, "utf8");
    expect(argv).toMatch(/config set --stack config --secret --non-interactive -- user-groups:apiKey/);
    expect(argv).not.toContain(KEY);
    // Recorded by Pulumi, encrypted (R6).
    const settings = readFileSync(path.join(env.workDir, "groups", "Pulumi.config.yaml"), "utf8");
    expect(settings).toMatch(/user-groups:apiKey:\s+secure:/);
    expect(settings).not.toContain(KEY);
  });

  it("a failing run (wrong passphrase) throws an error without the key", async () => {
    const { dir } = recordingPulumi();
    const error = await automation.previewUserGroups(options("config", "wrong-passphrase", dir)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(automation.WrongPassphraseError);
    // Ours, and Pulumi's underneath it (the cause), both scrubbed.
    const cause = (error as Error).cause as Error;
    const text = [error, cause].map((e) => `${(e as Error).message}\n${(e as Error).stack ?? ""}\n${JSON.stringify(e)}`).join("\n");
    expect(text).toMatch(/does not decrypt the secrets of stack "config"[\s\S]*incorrect passphrase/);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("wrong-passphrase");
  });
});

// Issue #39, item 5: no credential on any command line, from any variable. The
// one variable of ours that becomes an argument is USER_GROUPS_ENGINE_OTEL_TRACES
// (`--otel-traces`, the only way the engine takes it; the OTLP endpoint's
// derived destination keeps host and port only): one with a query or fragment is
// refused before any engine run. Every process's /proc/<pid>/cmdline is scanned
// all through a run with OpenTelemetry on, whose credential (an OTLP header)
// travels in the environment.
describe("1a. no credential on any command line with OpenTelemetry on", () => {
  const CANARY = "otel-canary-credential-5e7c1d";

  /** Samples every process's command line until stopped: those holding `secret`, and whether one held `seen` (our engine run). */
  function scanCommandLines(secret: string, seen: string): { stop(): { holding: string[]; sawRun: boolean; scans: number } } {
    const holding = new Set<string>();
    let sawRun = false;
    let scans = 0;
    const scan = () => {
      scans++;
      for (const entry of readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        const line = commandLine(Number(entry));
        if (line.includes(secret)) holding.add(`${entry}: ${line.slice(0, 200)}`);
        if (line.includes(seen)) sawRun = true;
      }
    };
    const timer = setInterval(scan, 20);
    return {
      stop: () => {
        clearInterval(timer);
        scan();
        return { holding: [...holding], sawRun, scans };
      },
    };
  }

  it("refuses a traces destination with a credential in its query or fragment before any engine run, without showing it", async () => {
    const log = path.join(env.workDir, "otel-argv.log");
    const bin = path.join(env.workDir, "otel-bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "pulumi"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${path.join(env.binDir, "pulumi")}' "$@"\n`, { mode: 0o755 });
    const destinations = [`file://${path.join(env.workDir, "engine-trace.json")}?api_key=${CANARY}`, `https://collector.example/v1/traces#${CANARY}`, `grpc://collector.example:4317/?token=${CANARY}`];
    for (const destination of destinations) {
      const error = await automation
        .provisionUserGroups({
          stack: "otel-refused",
          workDir: path.join(env.workDir, "otel-groups"),
          envVars: envVarsWith({ USER_GROUPS_ENGINE_OTEL_TRACES: destination, PATH: `${bin}${path.delimiter}${env.envVars.PATH}` }),
          groups: [{ name: "Traced", userGroupId: "otel-refused" }],
        })
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        );
      expect(error).toMatchObject({ code: "invalid_trace_destination" });
      expect(error!.message).toContain("USER_GROUPS_ENGINE_OTEL_TRACES must not hold a");
      expect(`${error!.message}\n${error!.stack ?? ""}`).not.toContain(CANARY);
    }
    // No engine run started: no `pulumi up` or `preview` recorded, nothing created.
    const argv = existsSync(log) ? readFileSync(log, "utf8") : "";
    expect(argv).not.toMatch(/^(up|preview|refresh|destroy)\b/m);
    expect(argv).not.toContain(CANARY);
    expect(server.groups().map((g) => g.user_group_id)).not.toContain("otel-refused");
  });

  it("a run with the engine's traces on: the destination on the command line, the OTLP header's credential on none", async () => {
    const traceFile = path.join(env.workDir, "engine-trace.json");
    const scanner = scanCommandLines(CANARY, traceFile);
    let seen: ReturnType<ReturnType<typeof scanCommandLines>["stop"]>;
    try {
      const result = await automation.provisionUserGroups({
        stack: "otel-on",
        workDir: path.join(env.workDir, "otel-groups"),
        envVars: envVarsWith({ USER_GROUPS_ENGINE_OTEL_TRACES: `file://${traceFile}`, OTEL_EXPORTER_OTLP_HEADERS: `api-key=${CANARY}` }),
        groups: [{ name: "Traced", userGroupId: "otel-on" }],
      });
      expect(result.summary.create).toBe(1);
    } finally {
      seen = scanner.stop();
    }
    // The scan ran all through the engine run: it saw the engine's command line (`--otel-traces file://...`).
    expect(seen.sawRun, `${seen.scans} scans`).toBe(true);
    expect(existsSync(traceFile)).toBe(true);
    expect(seen.holding).toEqual([]);
  });
});

describe("1b. a later run of the same work directory", () => {
  it("runs Pulumi in a private directory of its own: the kept settings decrypt the key, nothing the work directory holds runs", async () => {
    const workDir = path.join(env.workDir, "groups");
    const settings = path.join(workDir, "Pulumi.config.yaml");
    const settingsBefore = readFileSync(settings, "utf8");
    expect(settingsBefore).toMatch(/user-groups:apiKey:\s+secure:/); // left by the first test of this file
    // Planted: packages a provider process would load from the work directory, and an old project file with a password.
    const marker = path.join(env.workDir, "PLANTED-CODE-RAN");
    const evil = `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran"); throw new Error("planted");`;
    for (const pkg of ["pulumi-user-groups", "@pulumi/pulumi"]) {
      const dir = path.join(workDir, "node_modules", pkg);
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(path.join(dir, "cmd", "dynamic-provider"), { recursive: true });
      writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: pkg, main: "index.js", exports: { ".": "./index.js", "./provider-runtime": "./index.js", "./package.json": "./package.json" } }));
      writeFileSync(path.join(dir, "index.js"), evil);
      writeFileSync(path.join(dir, "cmd", "dynamic-provider", "index.js"), evil);
    }
    writeFileSync(path.join(workDir, "Pulumi.yaml"), "name: user-groups\nruntime: nodejs\nbackend:\n  url: postgres://u:old-secret@db/x\n");
    const runRoot = mkdtempSync(path.join(env.workDir, "tmp-"));
    const journalBefore = server.journal().length;
    const tmpBefore = process.env.TMPDIR;
    process.env.TMPDIR = runRoot; // where this run makes its private directory
    try {
      const { PULUMI_CONFIG_PASSPHRASE: _p, ...envVars } = env.envVars;
      // No key in the environment and none passed: a refresh reads each group with the key from the kept settings.
      const refreshed = await automation.refreshUserGroups({ stack: "config", workDir, passphrase: "right-passphrase", envVars: { ...envVars, PULUMI_BACKEND_URL: "" } });
      expect(refreshed.changed).toBe(false);
      expect(refreshed.groups.map((g) => `${g.resourceName}:${g.change}`)).toEqual(["default.from-config:same"]);
    } finally {
      if (tmpBefore === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpBefore;
    }
    expect(server.journal().slice(journalBefore).map((entry) => `${entry.method} ${entry.status}`)).toEqual(["PUT 200"]);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(path.join(workDir, "Pulumi.yaml"))).toBe(false);
    expect(readFileSync(settings, "utf8")).toBe(settingsBefore);
    expect(readdirSync(runRoot)).toEqual([]); // the run directory is gone
  });
});

describe("2 and 3. the work directory: nothing planted there runs or is written through", () => {
  /** A provider plugin a pull request could commit: if anything runs it, it leaves a marker. */
  function plantedPlugin(root: string): { dir: string; marker: string } {
    const dir = path.join(root, "evil-plugin");
    const marker = path.join(root, "PLUGIN-RAN");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "pulumi-resource-pulumi-nodejs"), `#!/bin/sh\nenv > '${marker}'\nexit 1\n`, { mode: 0o755 });
    return { dir, marker };
  }

  const projectNaming = (pluginDir: string) => ({ name: "user-groups", runtime: "nodejs", plugins: { providers: [{ name: "pulumi-nodejs", path: pluginDir }] } });

  /** Each attack of issue 23: what is planted in `.user-groups/`, and the file the refusal must name. */
  const ATTACKS: Array<[string, (workDir: string, pluginDir: string, victim: string) => string]> = [
    ["Pulumi.json naming a provider plugin", (w, p) => write(path.join(w, "Pulumi.json"), JSON.stringify(projectNaming(p)))],
    ["Pulumi.yml naming a provider plugin", (w, p) => write(path.join(w, "Pulumi.yml"), JSON.stringify(projectNaming(p)))],
    ["a Pulumi.yaml naming a provider plugin", (w, p) => write(path.join(w, "Pulumi.yaml"), JSON.stringify(projectNaming(p)))],
    ["a Pulumi.yaml symlinked to another file", (w, _p, v) => link(v, path.join(w, "Pulumi.yaml"))],
    ["the stack settings symlinked to another file", (w, _p, v) => link(v, path.join(w, "Pulumi.prod.yaml"))],
    ["Pulumi.prod.json", (w) => write(path.join(w, "Pulumi.prod.json"), '{"config":{"user-groups:baseUrl":"https://evil.example"}}')],
    ["Pulumi.prod.yml", (w) => write(path.join(w, "Pulumi.prod.yml"), "config:\n  user-groups:baseUrl: https://evil.example\n")],
    ["the file backend symlinked elsewhere", (w, _p, v) => link(path.dirname(v), path.join(w, "state"))],
  ];
  function write(file: string, content: string): string {
    writeFileSync(file, content);
    return file;
  }
  function link(target: string, file: string): string {
    symlinkSync(target, file);
    return file;
  }

  it.each(ATTACKS)("refuses %s, naming it, before anything runs or is written", async (_what, plant) => {
    const root = mkdtempSync(path.join(env.workDir, "attack-"));
    const workDir = path.join(root, ".user-groups");
    mkdirSync(workDir);
    const { dir, marker } = plantedPlugin(root);
    const victim = path.join(root, "victim", "precious.txt");
    mkdirSync(path.dirname(victim));
    writeFileSync(victim, "precious\n");
    const planted = plant(workDir, dir, victim);
    const error = await automation
      .previewUserGroups({ stack: "prod", workDir, passphrase: "p", envVars: { ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_API_KEY: KEY }, groups: [{ name: "A", userGroupId: "a" }] })
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(automation.UntrustedWorkspaceError);
    expect((error as Error).message).toContain(`${planted} `);
    expect((error as Error).message).toMatch(/refusing to run with it[\s\S]*Remove it and run again/);
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(readdirSync(path.dirname(victim))).toEqual(["precious.txt"]);
  });

  it("the CLI refuses a committed .user-groups/Pulumi.json on a plain preview (exit 2), and its plugin never runs", async () => {
    const repo = mkdtempSync(path.join(env.workDir, "repo-"));
    mkdirSync(path.join(repo, ".user-groups"));
    const { dir, marker } = plantedPlugin(repo);
    // As reproduced: beside the Pulumi.yaml an earlier version wrote, which the Automation API would rewrite while the CLI read Pulumi.json.
    write(path.join(repo, ".user-groups", "Pulumi.yaml"), "name: user-groups\nruntime: nodejs\n");
    const planted = write(path.join(repo, ".user-groups", "Pulumi.json"), JSON.stringify(projectNaming(dir)));
    write(path.join(repo, "groups.yaml"), "groups:\n  - { name: A, userGroupId: a }\n");
    const run = await runUserGroupsCli(["preview", "--file", "groups.yaml", "--stack", "prod"], {
      cwd: repo,
      env: { ...process.env, ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_API_KEY: KEY },
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${planted} is not a file pulumi-user-groups writes`);
    expect(existsSync(marker)).toBe(false);
  });

  it("makes the work directory and the file backend 0700, and tightens an existing backend directory", () => {
    const workDir = path.join(env.workDir, "fresh", ".user-groups");
    const prepared = workspace.prepareWorkspace(workDir, undefined, "prod");
    expect(modeOf(workDir)).toBe("700");
    expect(modeOf(path.join(workDir, "state"))).toBe("700");
    expect(prepared.backendUrl).toBe(`file://${path.join(workDir, "state")}`);
    chmodSync(path.join(workDir, "state"), 0o755);
    workspace.prepareWorkspace(workDir, undefined, "prod");
    expect(modeOf(path.join(workDir, "state"))).toBe("700");
  });

  it("removes the project file an earlier version wrote (its backend URL may hold a password), and nothing else", () => {
    const workDir = path.join(env.workDir, "legacy", ".user-groups");
    mkdirSync(workDir, { recursive: true });
    write(path.join(workDir, "Pulumi.yaml"), "name: user-groups\nruntime: nodejs\nbackend:\n  url: postgres://u:legacy-secret@db/x\n");
    write(path.join(workDir, "Pulumi.prod.yaml"), "encryptionsalt: v1:abc\n");
    workspace.prepareWorkspace(workDir, "postgres://u:legacy-secret@db/x", "prod");
    expect(readdirSync(workDir).sort()).toEqual(["Pulumi.prod.yaml"]);
  });
});

describe("4. stack names", () => {
  it("follow Pulumi's rule, and never name a path", () => {
    for (const name of ["prod", "my-stack_1.2", "org/prod", "org/project/prod", "a".repeat(100)]) expect(automation.isValidStackName(name), name).toBe(true);
    for (const name of ["", "../x", "..", ".", "a/../b", "x/", "/x", "a b", "a/b/c/d", "a".repeat(101), "x\\y", "st\u00e4ck"]) {
      expect(automation.isValidStackName(name), name).toBe(false);
    }
  });

  it("recoverStack refuses ../x before touching any path", async () => {
    const workDir = path.join(env.workDir, "recover-traversal");
    const error = await automation.recoverStack({ stack: "../x", workDir, passphrase: "p", groups: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(automation.InvalidStackNameError);
    expect(existsSync(workDir)).toBe(false);
  });

  it("the CLI refuses it as bad usage (exit 2)", async () => {
    const file = path.join(env.workDir, "groups.yaml");
    writeFileSync(file, "groups: []\n");
    const stderr: string[] = [];
    const code = await cliModule.main(["recover", "--file", file, "--stack", "../x", "--yes"], {
      stdout: () => {},
      stderr: (text) => stderr.push(text),
      isTty: false,
      progressIsTty: false,
      confirm: async () => false,
      env: {},
    });
    expect(code).toBe(cliModule.EXIT_USAGE);
    expect(stderr.join("")).toMatch(/--stack takes letters, digits/);
    expect(existsSync(path.join(env.workDir, ".user-groups"))).toBe(false);
  });
});

describe("7. the demo with real credentials", () => {
  it("requires PULUMI_CONFIG_PASSPHRASE and changes nothing without it", () => {
    const demoDir = path.join(REPO_ROOT, ".demo");
    const existed = existsSync(demoDir);
    const { PULUMI_CONFIG_PASSPHRASE: _unset, ...inherited } = process.env;
    const run = spawnSync(process.execPath, [path.join(REPO_ROOT, "build/scripts/demo.js"), "up"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...inherited, USER_GROUPS_BASE_URL: "https://dashboards.example.com", USER_GROUPS_API_KEY: "real-key-0001" },
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/set PULUMI_CONFIG_PASSPHRASE to a passphrase of your own/);
    expect(run.stdout + run.stderr).not.toContain("real-key-0001");
    expect(existsSync(demoDir)).toBe(existed);
    if (!existed) rmSync(demoDir, { recursive: true, force: true });
  });
});

describe("8. keys only through the environment or stdin, in every doc and message", () => {
  /** Text files a user copies commands from, and every source that words a message. */
  function filesToScan(): string[] {
    const walk = (dir: string, keep: (file: string) => boolean): string[] =>
      readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
        const rel = path.join(dir, entry.name);
        if (entry.isDirectory()) return entry.name === "node_modules" ? [] : walk(rel, keep);
        return keep(entry.name) ? [rel] : [];
      });
    return ["README.md", "CONTRIBUTING.md", ...walk("docs", (f) => f.endsWith(".md")), ...walk("examples", (f) => /\.(md|ts|ya?ml)$/.test(f)), ...walk("provider", (f) => f.endsWith(".ts"))];
  }

  it("never shows `pulumi config set` with a key's value as an argument", () => {
    // `pulumi config set [--path] --secret ...apiKey <value>`: the value would be in `ps` and shell history.
    const keyAsArgument = /config set[^`\n|]*\bapiKey\s+(?:"|\$|<|[A-Za-z0-9])/;
    const offenders = filesToScan().flatMap((file) =>
      readFileSync(path.join(REPO_ROOT, file), "utf8")
        .split("\n")
        .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
        .filter(({ line }) => keyAsArgument.test(line)),
    );
    expect(offenders).toEqual([]);
    // The attack itself is caught: the old README line.
    expect(keyAsArgument.test('pulumi config set --secret user-groups:apiKey "$CUSTOMER_KEY"')).toBe(true);
    expect(keyAsArgument.test('printf %s "$KEY" | pulumi config set --secret user-groups:apiKey')).toBe(false);
  });

  it("documents that Pulumi's own -v / --debug output can print secrets, and what to do", () => {
    const security = readFileSync(path.join(REPO_ROOT, "docs/security.md"), "utf8");
    expect(security).toMatch(/Pulumi's debug output can print secrets/);
    expect(security).toMatch(/-v=N[\s\S]*--debug[\s\S]*PULUMI_DEBUG_GRPC[\s\S]*never turn these on in CI with real keys/);
  });
});

describe("9. a state is data (F10): nothing in it is fetched or run, for the fleet too", () => {
  type InternalModule = typeof import("../../provider/automation/internal");
  const internal = load(path.join(REPO_ROOT, "dist/provider/automation/internal.js")) as InternalModule;
  const engineEnv = () => ({ ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY });

  it("starts every engine with automatic plugin acquisition off, whatever envVars says", async () => {
    const selected = await internal.selectStack(
      { stack: "no-acquisition", workDir: path.join(env.workDir, "no-acquisition"), envVars: { ...engineEnv(), PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "false" } },
      async () => ({}),
    );
    try {
      // What the Automation API gives every `pulumi` command it runs for this stack (up, preview, refresh, destroy...).
      expect(selected.stack.workspace.envVars.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION).toBe("true");
    } finally {
      selected.dispose();
    }
  });

  it("a fleet's ensure and remove on a state with a planted plugin download URL: refused naming it, nothing fetched, started or sent", async () => {
    const root = mkdtempSync(path.join(env.workDir, "planted-"));
    const plugin = await servePlantedPlugin(root);
    const options = { stack: "fleet-planted", workDir: path.join(env.workDir, "fleet-planted"), envVars: engineEnv() };
    const fleet = new automation.UserGroupFleet(options);
    try {
      await fleet.ensure({ name: "Fleet A", userGroupId: "fleet-a" });
      await fleet.signUps?.closeAll(); // answered record-first: in the state once adopted
      // Planted as the review's finding did: the default provider's inputs and outputs.
      const selected = await internal.selectStack(options, async () => ({}), { mustExist: true });
      try {
        const state = await selected.stack.exportStack();
        const resources = (state.deployment as { resources: Array<Record<string, unknown>> }).resources;
        const provider = resources.find((r) => r.type === "pulumi:providers:pulumi-nodejs")!;
        const planted = { __internal: { name: "evilplug", pluginDownloadURL: plugin.url }, version: PLANTED_PLUGIN_VERSION };
        provider.inputs = planted;
        provider.outputs = planted;
        await selected.stack.importStack(state);
      } finally {
        selected.dispose();
      }
      const mark = server.journal().length;
      for (const call of [() => fleet.ensure({ name: "Fleet B", userGroupId: "fleet-b" }), () => fleet.ensure({ name: "Fleet A", userGroupId: "fleet-a" }), () => fleet.remove("fleet-a")]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(automation.UntrustedStateError);
        expect((error as Error & { code: string }).code).toBe("untrusted_state");
        expect((error as Error).message).toContain('"default" ("pulumi:providers:pulumi-nodejs") inputs.__internal: is a field this package never writes');
        expect((error as Error).message).not.toContain(KEY);
      }
      expect(plugin.requests).toEqual([]);
      expect(plugin.ran()).toBe(false);
      expect(server.journal().length).toBe(mark);
    } finally {
      await fleet.close();
      await plugin.close();
    }
  });
});
