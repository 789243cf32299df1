// Issue #15, items 1-4 and 7: no key on a command line or in an error, no
// planted provider code, private work directories, stack names that cannot
// reach a path, and a demo that never protects real credentials with the
// public demo passphrase.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

type AutomationModule = typeof import("../../provider/automation/index");
type WorkspaceModule = typeof import("../../provider/automation/workspace");
type CliModule = typeof import("../../provider/cli/user-groups");
// As a service loads it: the built package.
const load = createRequire(path.join(REPO_ROOT, "package.json"));
const automation = load("pulumi-user-groups/automation") as AutomationModule;
const workspace = load(path.join(REPO_ROOT, "dist/provider/automation/workspace.js")) as WorkspaceModule;
const cliModule = load(USER_GROUPS_CLI) as CliModule;

const KEY = "security-config-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("security");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

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

describe("2 and 3. the work directory: only our own links, private modes", () => {
  const ownRoot = realpathSync(path.dirname(load.resolve("pulumi-user-groups/package.json")));

  it("refuses a planted package directory, and leaves it for the user to look at", () => {
    const workDir = path.join(env.workDir, "planted-dir");
    const planted = path.join(workDir, "node_modules", "pulumi-user-groups");
    mkdirSync(planted, { recursive: true });
    writeFileSync(path.join(planted, "package.json"), '{"name":"pulumi-user-groups","main":"evil.js"}');
    expect(() => workspace.prepareWorkspace(workDir, undefined)).toThrow(workspace.UntrustedWorkspaceError);
    expect(() => workspace.prepareWorkspace(workDir, undefined)).toThrow(/node_modules\/pulumi-user-groups is not the link .* Remove it/);
    expect(existsSync(path.join(planted, "package.json"))).toBe(true);
  });

  it("replaces a symlink that points elsewhere, and refuses a planted file for @pulumi/pulumi", () => {
    const workDir = path.join(env.workDir, "planted-link");
    const elsewhere = path.join(env.workDir, "elsewhere");
    mkdirSync(elsewhere, { recursive: true });
    mkdirSync(path.join(workDir, "node_modules"), { recursive: true });
    symlinkSync(elsewhere, path.join(workDir, "node_modules", "pulumi-user-groups"));
    workspace.prepareWorkspace(workDir, undefined);
    expect(realpathSync(path.join(workDir, "node_modules", "pulumi-user-groups"))).toBe(ownRoot);

    const fileDir = path.join(env.workDir, "planted-file");
    mkdirSync(path.join(fileDir, "node_modules", "@pulumi"), { recursive: true });
    writeFileSync(path.join(fileDir, "node_modules", "@pulumi", "pulumi"), "not a package");
    expect(() => workspace.prepareWorkspace(fileDir, undefined)).toThrow(/node_modules\/@pulumi\/pulumi is not the link/);
  });

  it("makes the work directory and the file backend 0700, and tightens an existing backend directory", () => {
    const workDir = path.join(env.workDir, "fresh", ".user-groups");
    const prepared = workspace.prepareWorkspace(workDir, undefined);
    expect(modeOf(workDir)).toBe("700");
    expect(modeOf(path.join(workDir, "state"))).toBe("700");
    expect(prepared.backendUrl).toBe(`file://${path.join(workDir, "state")}`);
    chmodSync(path.join(workDir, "state"), 0o755);
    workspace.prepareWorkspace(workDir, undefined);
    expect(modeOf(path.join(workDir, "state"))).toBe("700");
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
    // README.md is left to the package's owner (issue #23 item 8 lists its lines).
    return [...walk("docs", (f) => f.endsWith(".md")), ...walk("examples", (f) => /\.(md|ts|ya?ml)$/.test(f)), ...walk("provider", (f) => f.endsWith(".ts"))];
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
