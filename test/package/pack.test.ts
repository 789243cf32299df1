// The package as a user gets it: `npm pack` of the built repository, the tarball's
// file list, then a real `npm install <tarball>` into a fresh project outside the
// repository (so nothing can resolve from the repository's own node_modules), and
// from that install: the fake server's bin, a `pulumi up` of an on-disk program that
// declares a UserGroup, and `user-groups preview`. dist/ is built by `pretest`.
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type CliRun, watchServer } from "../fake-server/cli-process";

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

describe("the npm package", () => {
  let tmp = "";
  let project = "";
  let packed: PackResult;
  let server: CliRun | undefined;
  let serverUrl = "";

  beforeAll(async () => {
    tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ug-pack-")));
    chmodSync(tmp, 0o700);
    // --ignore-scripts: `prepack` would rebuild dist/ under the other test files' feet.
    const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tmp], { cwd: REPO_ROOT, env: childEnv(tmp) });
    packed = (JSON.parse(stdout) as PackResult[])[0] as PackResult;

    project = path.join(tmp, "project");
    mkdirSync(project);
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "packed-consumer", version: "1.0.0", private: true }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", path.join(tmp, packed.filename)], {
      cwd: project,
      env: childEnv(tmp),
      maxBuffer: 16 * 1024 * 1024,
    });

    server = watchServer(
      spawn(path.join(project, "node_modules/.bin/user-groups-fake-server"), ["--port", "0"], {
        cwd: project,
        stdio: ["ignore", "pipe", "pipe"],
        env: childEnv(tmp, { USER_GROUPS_FAKE_API_KEYS: `${API_KEY}=Customer` }),
      }) as ChildProcess,
    );
    serverUrl = await server.listening;
  }, 300_000);

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
});
