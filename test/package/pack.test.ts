// The package as a user gets it, installed from a checkout the way README.md says
// (its blocks marked "run by test/package/pack.test.ts", run as written in a
// script, no terminal, no added flag): beside a clone of the repository (this
// checkout's files, with a hard-linked node_modules standing in for `npm ci`),
// `npm pack` builds and writes the tarball and a fresh project outside the
// repository installs it (so nothing can resolve from the repository's own
// node_modules); then the tarball's file list, and from that install the fake
// server's bin, a `pulumi up` of an on-disk program that declares a UserGroup,
// and `user-groups preview`; and the README's plugin block: `npm run release`
// in the clone, served by Python, installed by `pulumi plugin install`.
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type CliRun, watchServer } from "../fake-server/cli-process";
import { blocksRunBy } from "../support/doc-blocks";

const REPO_ROOT = path.resolve(__dirname, "../..");
const run = promisify(execFile);

const API_KEY = "packed-test-key-0001";
const PASSPHRASE = "pack-test-passphrase";

/** What a user of the package needs, and nothing else: the product, its docs (with the plots and trace pictures they show), license and changelog. */
const SHIPPED = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^CHANGELOG\.md$/,
  /^dist\/(provider|fake-server|testing)\/.+\.(js|d\.ts)$/,
  /^docs\/[^/]+\.md$/,
  /^docs\/openapi\.json$/,
  /^docs\/(perf|trace)-[a-z-]+\.svg$/,
  /^docs\/dashboard\.png$/,
  /^schema\/[^/]+\.schema\.json$/,
];

interface PackResult {
  filename: string;
  size: number;
  files: { path: string }[];
}

/** The environment for child processes: this Node first on PATH (the bins say `env node`), no npm lifecycle leftovers. */
function childEnv(tmp: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")));
  const pathValue = [path.dirname(process.execPath), inject("pulumiBinDir"), process.env.PATH ?? ""].join(path.delimiter);
  return { ...inherited, PULUMI_HOME: path.join(tmp, "pulumi-home"), PULUMI_SKIP_UPDATE_CHECK: "true", ...extra, PATH: pathValue };
}

/** README's install-from-a-checkout blocks, in order: the package, then the plugin. */
const README_BLOCKS = blocksRunBy("README.md", "test/package/pack.test.ts");

/**
 * A clone of this checkout in `dir`/pulumi-user-groups: its files as git sees them (tracked, and
 * new ones not ignored) and, standing in for `npm ci`, node_modules hard-linked (copied where
 * links cannot cross file systems). Nothing it builds lands in the repository.
 */
async function cloneCheckout(dir: string): Promise<string> {
  const clone = path.join(dir, "pulumi-user-groups");
  const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 });
  for (const file of stdout.split("\0").filter(Boolean)) {
    const from = path.join(REPO_ROOT, file);
    if (!statSync(from, { throwIfNoEntry: false })?.isFile()) continue; // deleted in the work tree
    mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    copyFileSync(from, path.join(clone, file));
    chmodSync(path.join(clone, file), statSync(from).mode & 0o777);
  }
  await run("cp", ["-al", path.join(REPO_ROOT, "node_modules"), path.join(clone, "node_modules")]).catch(() =>
    run("cp", ["-a", path.join(REPO_ROOT, "node_modules"), path.join(clone, "node_modules")]),
  );
  // The tools `npm test` built already (build/, not the release): `npm run release`'s incremental
  // `build:tools` then checks them instead of compiling them all again. It compiles what changed.
  if (existsSync(path.join(REPO_ROOT, "build", "tools.tsbuildinfo"))) {
    cpSync(path.join(REPO_ROOT, "build"), path.join(clone, "build"), { recursive: true, filter: (source) => !source.startsWith(path.join(REPO_ROOT, "build", "release")) });
  }
  return clone;
}

/** Runs a README block as written, from `cwd`, in bash -euo pipefail; rejects with its output when it fails. */
async function runBlock(text: string, cwd: string, env: NodeJS.ProcessEnv, isolateNetwork = false): Promise<string> {
  const script = `set -euo pipefail\n${text}\n`;
  // The plugin block serves on a fixed port (8765): in a network namespace of its own when the
  // system allows one, so parallel runs on one machine cannot meet there.
  const [command, args] = isolateNetwork && (await canIsolateNetwork()) ? ["unshare", ["-rn", "bash", "-c", `ip link set lo up && bash -c ${shellQuote(script)}`]] : ["bash", ["-c", script]];
  try {
    const { stdout, stderr } = await run(command, args as string[], { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 540_000 });
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`README block failed: ${e.message}\n${(e.stdout ?? "").slice(-4000)}\n${(e.stderr ?? "").slice(-4000)}`);
  }
}

const shellQuote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

let isolation: Promise<boolean> | undefined;
function canIsolateNetwork(): Promise<boolean> {
  return (isolation ??= run("unshare", ["-rn", "ip", "link", "set", "lo", "up"]).then(
    () => true,
    () => false,
  ));
}

describe("the npm package", () => {
  let tmp = "";
  let project = "";
  let packed: PackResult;
  let server: CliRun | undefined;
  let serverUrl = "";

  beforeAll(async () => {
    tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ug-pack-")));
    chmodSync(tmp, 0o700);
    expect(README_BLOCKS.length).toBe(2);
    const clone = await cloneCheckout(tmp);
    // The user's npm settings, not flags of the block: the cache first (the registry only for what it lacks), no audit.
    await runBlock(README_BLOCKS[0]!.text, tmp, childEnv(tmp, { npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false" }));
    const version = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;
    const filename = `pulumi-user-groups-${version}.tgz`;
    const { stdout: listed } = await run("tar", ["-tzf", path.join(clone, filename)], { maxBuffer: 16 * 1024 * 1024 });
    packed = { filename, size: statSync(path.join(clone, filename)).size, files: listed.trim().split("\n").map((file) => ({ path: file.replace(/^package\//, "") })) };
    project = path.join(tmp, "my-project");

    server = watchServer(
      spawn(path.join(project, "node_modules/.bin/user-groups-fake-server"), ["--port", "0"], {
        cwd: project,
        stdio: ["ignore", "pipe", "pipe"],
        env: childEnv(tmp, { USER_GROUPS_FAKE_API_KEYS: `${API_KEY}=Customer` }),
      }) as ChildProcess,
    );
    serverUrl = await server.listening;
  }, 420_000);

  afterAll(async () => {
    if (server !== undefined && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
  });

  it("ships the product, README, LICENSE and CHANGELOG, and no repository tools", () => {
    const files = packed.files.map((file) => file.path);
    expect(files.filter((file) => !SHIPPED.some((pattern) => pattern.test(file)))).toEqual([]);

    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      bin: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    const entryPoints = [
      ...Object.values(pkg.bin),
      ...Object.values(pkg.exports).flatMap((target) => (typeof target === "string" ? [target] : Object.values(target))),
    ].map((target) => target.replace(/^\.\//, ""));
    expect(entryPoints.filter((target) => !files.includes(target))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(["README.md", "LICENSE", "CHANGELOG.md"]));
    expect(files.some((file) => /^(scripts|bench|test|examples)\//.test(file) || /^dist\/(bench|scripts|test)\//.test(file))).toBe(false);

    const license = readFileSync(path.join(project, "node_modules/pulumi-user-groups/LICENSE"), "utf8");
    expect(license).toContain("Apache License\n                           Version 2.0, January 2004");
    expect(license).toContain("END OF TERMS AND CONDITIONS");
  });

  it("links only to what it ships: README and docs work from the npm page", () => {
    const files = new Set(packed.files.map((file) => file.path));
    const broken: string[] = [];
    for (const doc of [...files].filter((file) => file.endsWith(".md"))) {
      const text = readFileSync(path.join(project, "node_modules/pulumi-user-groups", doc), "utf8").replace(/^```[\s\S]*?^```$/gm, "");
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const file = path.posix.normalize(path.posix.join(path.posix.dirname(doc), target.replace(/#.*$/, "")));
        if (!files.has(file)) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("runs its fake server from the installed bin", async () => {
    const response = await fetch(`${serverUrl}/__admin/groups`);
    expect(await response.json()).toEqual({ success: 1, groups: [] });
    expect(server?.stderr()).not.toContain(API_KEY);
  });

  it("creates a UserGroup with `pulumi up` of an on-disk program that requires the installed package", async () => {
    writeFileSync(
      path.join(project, "Pulumi.yaml"),
      "name: packed-consumer\nmain: index.js\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n",
    );
    writeFileSync(
      path.join(project, "index.js"),
      `const { UserGroup } = require("pulumi-user-groups");
const group = new UserGroup("packed", { name: "Packed Co", userGroupId: "packed-co", properties: { plan: "team" } });
exports.teamId = group.teamId;
exports.installedAt = require.resolve("pulumi-user-groups");
`,
    );
    const backend = path.join(tmp, "state");
    mkdirSync(backend, { mode: 0o700 });
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: "packed", workDir: project },
      {
        envVars: {
          PULUMI_BACKEND_URL: `file://${backend}`,
          PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
          PULUMI_HOME: path.join(tmp, "pulumi-home"),
          PULUMI_SKIP_UPDATE_CHECK: "true",
          PATH: childEnv(tmp).PATH ?? "",
          USER_GROUPS_BASE_URL: serverUrl,
          USER_GROUPS_API_KEY: API_KEY,
        },
      },
    );
    const result = await stack.up();

    expect(result.summary.result).toBe("succeeded");
    expect(result.outputs.installedAt?.value).toBe(path.join(project, "node_modules/pulumi-user-groups/dist/provider/index.js"));
    const { groups } = (await (await fetch(`${serverUrl}/__admin/groups`)).json()) as {
      groups: { user_group_id: string; name: string; team_id: string; environment: string }[];
    };
    expect(groups.map((group) => ({ id: group.user_group_id, name: group.name, environment: group.environment }))).toEqual([
      { id: "packed-co", name: "Packed Co", environment: "Customer" },
    ]);
    expect(result.outputs.teamId?.value).toBe(groups[0]?.team_id);
  });

  it("previews a groups file with the installed `user-groups` command", async () => {
    writeFileSync(path.join(project, "groups.yaml"), "groups:\n  - name: CLI Co\n    userGroupId: cli-co\n");
    const { stdout } = await run(path.join(project, "node_modules/.bin/user-groups"), ["preview", "--file", "groups.yaml", "--json"], {
      cwd: project,
      env: childEnv(tmp, { USER_GROUPS_BASE_URL: serverUrl, USER_GROUPS_API_KEY: API_KEY, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE }),
    });
    const report = JSON.parse(stdout) as { operation: string; summary: Record<string, number>; groups: { userGroupId: string; change: string }[] };
    expect(report.operation).toBe("preview");
    expect(report.summary).toMatchObject({ create: 1, update: 0, delete: 0 });
    expect(report.groups).toEqual([expect.objectContaining({ userGroupId: "cli-co", change: "create" })]);
  });

  it("installs the provider plugin from the clone as README says: npm run release, a local server, pulumi plugin install", { timeout: 540_000 }, async () => {
    const version = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;
    const home = path.join(tmp, "plugin-home");
    await runBlock(README_BLOCKS[1]!.text, tmp, { ...childEnv(tmp), PULUMI_HOME: home }, true);
    const launcher = path.join(home, "plugins", `resource-user-groups-v${version}`, "pulumi-resource-user-groups");
    expect(statSync(launcher).mode & 0o111).not.toBe(0);
    // The release was written in the clone, nothing in the repository.
    expect(statSync(path.join(tmp, "pulumi-user-groups", "build", "release", `v${version}`, "SHA256SUMS")).isFile()).toBe(true);
  });
});
