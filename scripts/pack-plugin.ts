// `npm run plugin:pack`: the `user-groups` resource provider plugin as a
// tarball that `pulumi plugin install resource user-groups VERSION --file TARBALL`
// installs (docs/plugin.md). Inside, at the top: the `pulumi-resource-user-groups`
// launcher the engine runs, and node_modules/ with this package (as `npm pack`
// makes it) and its production dependencies at the versions package-lock.json
// locks, copied from this checkout's node_modules (no download). The plugin
// runs on the `node` found on PATH (or $PULUMI_USER_GROUPS_NODE), Node >= 22.
// This platform's archive only; `npm run release` (scripts/release.ts) makes
// every platform's from the same payload, with these functions.
//
// Usage: node build/scripts/pack-plugin.js [--out DIR]   (default: build/plugin)
// The last line of stdout is the tarball's absolute path.
import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "..", "..");

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  link?: boolean;
}

/** node_modules paths npm would install with --omit=dev, from the lockfile. */
export function productionPackages(lockfile: { packages: Record<string, LockEntry> }): string[] {
  return Object.entries(lockfile.packages)
    .filter(([key, entry]) => key.startsWith("node_modules/") && !entry.dev && !entry.devOptional && !entry.link)
    .map(([key]) => key);
}

export const LAUNCHER = `#!/bin/sh
# pulumi-resource-user-groups: the user-groups provider plugin (pulumi-user-groups).
# Runs the plugin beside this file on Node.js >= 22: $PULUMI_USER_GROUPS_NODE, else node on PATH.
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) || exit 1
exec "\${PULUMI_USER_GROUPS_NODE:-node}" "$here/node_modules/pulumi-user-groups/dist/provider/plugin/main.js" "$@"
`;

/**
 * Declarations and source maps are not needed to run; `.bin` directories hold
 * symlinks out of their package, which `pulumi plugin install` refuses.
 */
function keep(source: string): boolean {
  if (path.basename(source) === ".bin") return false;
  return !(source.endsWith(".d.ts") || source.endsWith(".map") || source.endsWith(".d.mts") || source.endsWith(".d.cts"));
}

/** The CRLF `.cmd` launcher of the Windows archive: Pulumi runs `pulumi-resource-NAME.exe` or `.cmd` there. */
export const WINDOWS_LAUNCHER = [
  "@echo off",
  "rem pulumi-resource-user-groups: the user-groups provider plugin (pulumi-user-groups).",
  "rem Runs the plugin beside this file on Node.js >= 22: %PULUMI_USER_GROUPS_NODE%, else node on PATH.",
  "setlocal",
  'set "PULUMI_USER_GROUPS_LAUNCH_NODE=%PULUMI_USER_GROUPS_NODE%"',
  'if not defined PULUMI_USER_GROUPS_LAUNCH_NODE set "PULUMI_USER_GROUPS_LAUNCH_NODE=node"',
  '"%PULUMI_USER_GROUPS_LAUNCH_NODE%" "%~dp0node_modules\\pulumi-user-groups\\dist\\provider\\plugin\\main.js" %*',
  "",
].join("\r\n");

export const PLUGIN_EXECUTABLE = "pulumi-resource-user-groups";

/** The platform this process runs on, in Pulumi's `{os}-{arch}` words. */
export function hostPlatform(): string {
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as "x64" | "arm64"] ?? process.arch;
  return `${process.platform === "win32" ? "windows" : process.platform}-${arch}`;
}

/** The archive's name, as Pulumi's plugin download asks for it (`pulumi-resource-NAME-vVERSION-OS-ARCH.tar.gz`). */
export function archiveName(version: string, platform: string): string {
  return `${PLUGIN_EXECUTABLE}-v${version}-${platform}.tar.gz`;
}

export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;
}

/**
 * The plugin's payload, the same on every platform: node_modules/ with this package
 * (exactly the files `npm pack` ships) and its production dependencies (plain
 * JavaScript: `npm run release` refuses a native `.node` module), and LICENSE.
 * Returns the staging directory (the caller removes it).
 */
export function stagePayload(): string {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { name: string; version: string };
  if (!existsSync(path.join(root, "dist", "provider", "plugin", "main.js"))) throw new Error("dist/ is not built: run npm run build first");
  const staging = mkdtempSync(path.join(os.tmpdir(), "user-groups-plugin-"));
  try {
    // This package, exactly the files `npm pack` ships (no prepack: dist/ is built already).
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", staging], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }),
    ) as { filename: string }[];
    const self = path.join(staging, "node_modules", pkg.name);
    mkdirSync(self, { recursive: true });
    execFileSync("tar", ["-xzf", path.join(staging, packed[0]!.filename), "-C", self, "--strip-components=1"]);
    rmSync(path.join(staging, packed[0]!.filename));

    const lockfile = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
    for (const key of productionPackages(lockfile)) {
      const from = path.join(root, key);
      if (!existsSync(from)) continue; // an optional dependency for another platform
      cpSync(from, path.join(staging, key), { recursive: true, filter: keep });
    }
    cpSync(path.join(root, "LICENSE"), path.join(staging, "LICENSE"));
    return staging;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Puts the launcher for `platform` into the staged payload (and removes the other one). */
export function placeLauncher(staging: string, platform: string): void {
  const windows = platform.startsWith("windows-");
  const [keepName, dropName] = windows ? [`${PLUGIN_EXECUTABLE}.cmd`, PLUGIN_EXECUTABLE] : [PLUGIN_EXECUTABLE, `${PLUGIN_EXECUTABLE}.cmd`];
  rmSync(path.join(staging, dropName), { force: true });
  writeFileSync(path.join(staging, keepName), windows ? WINDOWS_LAUNCHER : LAUNCHER);
  chmodSync(path.join(staging, keepName), 0o755);
}

/** Writes the staged payload as a .tar.gz, atomically (a partial file is never seen under `file`). */
export function writeArchive(staging: string, file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.tmp`;
  execFileSync("tar", ["-czf", partial, "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-C", staging, "."]);
  renameSync(partial, file);
}

function main(argv: string[]): void {
  const outIndex = argv.indexOf("--out");
  const outDir = path.resolve(outIndex >= 0 && argv[outIndex + 1] ? argv[outIndex + 1]! : path.join(root, "build", "plugin"));
  const staging = stagePayload();
  try {
    const platform = hostPlatform();
    placeLauncher(staging, platform);
    const tarball = path.join(outDir, archiveName(packageVersion(), platform));
    writeArchive(staging, tarball);
    process.stdout.write(`${tarball}\n`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (require.main === module) main(process.argv.slice(2));
