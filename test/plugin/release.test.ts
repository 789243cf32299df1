// The plugin's release as a user meets it: `npm run release`'s folder served
// over HTTP on 127.0.0.1, the way a GitHub release (or any mirror) serves it;
// pip installs the Python SDK's wheel from its URL there; and, with an empty
// PULUMI_HOME each time and nothing of ours on PATH,
// `pulumi plugin install ... --server URL` installs it, and a YAML program that
// names the resource type and a pluginDownloadURL gets the plugin installed by
// the engine on its first `pulumi up` and runs against the emulator.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { PLUGIN_DOWNLOAD_URL } from "../../provider/plugin/home";
import { archiveName, hostPlatform } from "../../scripts/pack-plugin";
import { CHECKSUMS_FILE, RELEASE_PLATFORMS } from "../../scripts/release";
import { REPO_ROOT } from "../support/pulumi-env";
import { type CliEnv, createCliEnv, type FolderServer, PLUGIN_VERSION, pipInstallAndImport, pythonImported, serveFolder } from "./support";

const run = promisify(execFile);
const WHEEL = `pulumi_user_groups-${PLUGIN_VERSION}-py3-none-any.whl`;
const KEY = "release-test-key-testing-01";

let out: string;
let release: string;
let host: FolderServer;
let server: FakeServer;
const envs: CliEnv[] = [];

/**
 * A `pulumi` surroundings with an empty PULUMI_HOME that may download plugins
 * (no plugin on its PATH: createCliEnv leaves out node_modules/.bin).
 */
function userEnv(label: string): CliEnv {
  const env = createCliEnv(label);
  delete env.vars.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION;
  envs.push(env);
  expect(existsSync(env.vars.PULUMI_HOME!)).toBe(false);
  return env;
}

function pluginDir(env: CliEnv): string {
  return path.join(env.vars.PULUMI_HOME!, "plugins", `resource-user-groups-v${PLUGIN_VERSION}`);
}

const hostArchivePath = () => `/v${PLUGIN_VERSION}/${archiveName(PLUGIN_VERSION, hostPlatform())}`;

beforeAll(async () => {
  mkdirSync(path.join(REPO_ROOT, ".work"), { recursive: true });
  out = mkdtempSync(path.join(REPO_ROOT, ".work", "release-"));
  const { stdout } = await run(process.execPath, [path.join(REPO_ROOT, "build/scripts/release.js"), "--out", out], { cwd: REPO_ROOT, maxBuffer: 8 * 1024 * 1024 });
  release = stdout.trim().split("\n").at(-1)!;
  host = await serveFolder(out);
  server = await startFakeServer({ port: 0, apiKeys: [{ key: KEY, environment: "Testing" }] });
}, 180_000);
afterAll(async () => {
  await host?.close();
  await server?.close();
  for (const env of envs) env.cleanup();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe("the plugin's release, served over HTTP", { timeout: 240_000 }, () => {
  it("npm run release writes an archive per platform, its launcher in it, and their checksums, in one folder per version", async () => {
    expect(release).toBe(path.join(out, `v${PLUGIN_VERSION}`));
    const archives = RELEASE_PLATFORMS.map((platform) => archiveName(PLUGIN_VERSION, platform));
    expect(archives).toEqual([
      `pulumi-resource-user-groups-v${PLUGIN_VERSION}-linux-amd64.tar.gz`,
      `pulumi-resource-user-groups-v${PLUGIN_VERSION}-linux-arm64.tar.gz`,
      `pulumi-resource-user-groups-v${PLUGIN_VERSION}-darwin-amd64.tar.gz`,
      `pulumi-resource-user-groups-v${PLUGIN_VERSION}-darwin-arm64.tar.gz`,
      `pulumi-resource-user-groups-v${PLUGIN_VERSION}-windows-amd64.tar.gz`,
    ]);
    const python = [WHEEL, `pulumi_user_groups-${PLUGIN_VERSION}.tar.gz`];
    expect(readdirSync(release).sort()).toEqual([...archives, ...python, CHECKSUMS_FILE].sort());
    const { stdout: checked } = await run("sha256sum", ["-c", CHECKSUMS_FILE], { cwd: release });
    expect(checked.trim().split("\n").sort()).toEqual([...archives, ...python].map((file) => `${file}: OK`).sort());

    const listings = new Map<string, string[]>();
    for (const platform of RELEASE_PLATFORMS) {
      const { stdout } = await run("tar", ["-tvzf", path.join(release, archiveName(PLUGIN_VERSION, platform))], { maxBuffer: 64 * 1024 * 1024 });
      const lines = stdout.trim().split("\n");
      const names = lines.map((line) => line.split(/\s+/).at(-1)!);
      expect(names).toContain("./node_modules/pulumi-user-groups/dist/provider/plugin/main.js");
      expect(names).toContain("./node_modules/@pulumi/pulumi/package.json");
      const launcher = platform.startsWith("windows-") ? "./pulumi-resource-user-groups.cmd" : "./pulumi-resource-user-groups";
      const other = platform.startsWith("windows-") ? "./pulumi-resource-user-groups" : "./pulumi-resource-user-groups.cmd";
      expect(names).not.toContain(other);
      expect(lines.find((line) => line.endsWith(` ${launcher}`))).toMatch(/^-rwxr-xr-x/);
      listings.set(platform, names.filter((name) => name !== launcher));
    }
    // One payload for every platform: they differ in the launcher only.
    for (const platform of RELEASE_PLATFORMS) expect(listings.get(platform)).toEqual(listings.get("linux-amd64"));

    const { stdout: cmd } = await run("tar", ["-xzOf", path.join(release, archiveName(PLUGIN_VERSION, "windows-amd64")), "./pulumi-resource-user-groups.cmd"]);
    expect(cmd.split("\r\n")).toContain('"%PULUMI_USER_GROUPS_LAUNCH_NODE%" "%~dp0node_modules\\pulumi-user-groups\\dist\\provider\\plugin\\main.js" %*');
    expect(cmd.replaceAll("\r\n", "")).not.toContain("\n");
  });

  it("pip installs the Python SDK's wheel by its URL in the release, into a fresh venv, and it imports", async () => {
    const before = host.requests.length;
    expect(await pipInstallAndImport(out, `${host.url}/v${PLUGIN_VERSION}/${WHEEL}`)).toEqual(pythonImported());
    expect(host.requests.slice(before)).toContainEqual({ path: `/v${PLUGIN_VERSION}/${WHEEL}`, status: 200 });
  });

  it("pulumi plugin install resource user-groups VERSION --server URL installs it into an empty PULUMI_HOME", async () => {
    const env = userEnv("release-install");
    const before = host.requests.length;
    await env.pulumi(["plugin", "install", "resource", "user-groups", PLUGIN_VERSION, "--server", `${host.url}/v\${VERSION}`]);
    expect(host.requests.slice(before)).toEqual([{ path: hostArchivePath(), status: 200 }]);
    const launcher = path.join(pluginDir(env), "pulumi-resource-user-groups");
    expect(statSync(launcher).mode & 0o111).not.toBe(0);

    const { stdout: listed } = await env.pulumi(["plugin", "ls", "--json"]);
    expect(JSON.parse(listed)).toEqual([expect.objectContaining({ name: "user-groups", kind: "resource", version: PLUGIN_VERSION })]);
    // The installed plugin runs (on the Node.js on PATH) and names where it comes from.
    const { stdout: schema } = await env.pulumi(["package", "get-schema", "user-groups"]);
    expect(JSON.parse(schema)).toMatchObject({ name: "user-groups", version: PLUGIN_VERSION, pluginDownloadURL: PLUGIN_DOWNLOAD_URL });
  });

  it("a YAML program naming the type and a pluginDownloadURL gets the plugin installed on its first pulumi up, and runs against the emulator", async () => {
    const env = userEnv("release-yaml");
    const program = path.join(env.workDir, "groups");
    mkdirSync(program);
    // `$${VERSION}` is Pulumi YAML's escape for the literal `${VERSION}` the engine fills in.
    writeFileSync(
      path.join(program, "Pulumi.yaml"),
      `name: groups
runtime: yaml
resources:
  acme:
    type: user-groups:index:UserGroup
    properties:
      name: Acme Corp
      userGroupId: acme
    options:
      version: ${PLUGIN_VERSION}
      pluginDownloadURL: ${host.url}/v$\${VERSION}
outputs:
  acmeToken: \${acme.token}
`,
    );
    const credentials = { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY };
    const before = host.requests.length;
    await env.pulumi(["stack", "init", "dev"], { cwd: program });
    const { stdout, stderr } = await env.pulumi(["up", "--yes"], { cwd: program, env: credentials });
    expect(host.requests.slice(before)).toEqual([{ path: hostArchivePath(), status: 200 }]);
    expect(stdout + stderr).toContain(`Installing plugin user-groups-${PLUGIN_VERSION}: done`);
    expect(stdout + stderr).not.toContain("using pulumi-resource-user-groups from $PATH");
    expect(existsSync(path.join(pluginDir(env), "pulumi-resource-user-groups"))).toBe(true);
    expect(stdout).toMatch(/\+ 2 created/);

    const acme = server.groups().find((group) => group.user_group_id === "acme");
    expect(acme).toMatchObject({ name: "Acme Corp" });
    expect(JSON.parse((await env.pulumi(["stack", "output", "--json"], { cwd: program })).stdout)).toEqual({ acmeToken: "[secret]" });
    expect(JSON.parse((await env.pulumi(["stack", "output", "--json", "--show-secrets"], { cwd: program })).stdout)).toEqual({ acmeToken: acme!.token });

    await env.pulumi(["preview", "--expect-no-changes"], { cwd: program, env: credentials });
    await env.pulumi(["destroy", "--yes"], { cwd: program, env: credentials });
    expect(server.groups()).toEqual([]);
    expect(host.requests.length).toBe(before + 1); // installed once, not fetched again
  });

  it("a program naming the canonical pluginDownloadURL (the schema's) is served the same folder by a mirror", async () => {
    // What a program written from the docs names; the engine's documented
    // PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES points that GitHub home at this server, as a mirror would.
    const env = userEnv("release-canonical");
    const program = path.join(env.workDir, "groups");
    mkdirSync(program);
    writeFileSync(
      path.join(program, "Pulumi.yaml"),
      `name: groups
runtime: yaml
resources:
  initech:
    type: user-groups:index:UserGroup
    properties:
      name: Initech
      userGroupId: initech
    options:
      version: ${PLUGIN_VERSION}
      pluginDownloadURL: ${PLUGIN_DOWNLOAD_URL}
`,
    );
    const overrides = `^${PLUGIN_DOWNLOAD_URL.replaceAll(".", "\\.")}$=${host.url}/v\${VERSION}`;
    const vars = { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY, PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES: overrides };
    const before = host.requests.length;
    await env.pulumi(["stack", "init", "dev"], { cwd: program });
    await env.pulumi(["up", "--yes", "--skip-preview"], { cwd: program, env: vars });
    expect(host.requests.slice(before)).toEqual([{ path: hostArchivePath(), status: 200 }]);
    expect(server.groups().map((group) => group.user_group_id)).toEqual(["initech"]);
    await env.pulumi(["destroy", "--yes", "--skip-preview"], { cwd: program, env: vars });
    expect(server.groups()).toEqual([]);
    expect(readFileSync(path.join(pluginDir(env), "pulumi-resource-user-groups"), "utf8")).toContain("pulumi-user-groups/dist/provider/plugin/main.js");
  });
});
