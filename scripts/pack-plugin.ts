// `npm run plugin:pack`: the `user-groups` resource provider plugin as a
// tarball that `pulumi plugin install resource user-groups VERSION --file TARBALL`
// installs (docs/plugin.md). Inside, at the top: the `pulumi-resource-user-groups`
// launcher the engine runs, and node_modules/ with this package (as `npm pack`
// makes it) and its production dependencies at the versions package-lock.json
// locks, copied from this checkout's node_modules (no download). The plugin
// runs on the `node` found on PATH (or $PULUMI_USER_GROUPS_NODE), Node >= 22.
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

function platform(): string {
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as "x64" | "arm64"] ?? process.arch;
  return `${process.platform}-${arch}`;
}

function main(argv: string[]): void {
  const outIndex = argv.indexOf("--out");
  const outDir = path.resolve(outIndex >= 0 && argv[outIndex + 1] ? argv[outIndex + 1]! : path.join(root, "build", "plugin"));
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

    writeFileSync(path.join(staging, "pulumi-resource-user-groups"), LAUNCHER);
    chmodSync(path.join(staging, "pulumi-resource-user-groups"), 0o755);
    cpSync(path.join(root, "LICENSE"), path.join(staging, "LICENSE"));

    mkdirSync(outDir, { recursive: true });
    const tarball = path.join(outDir, `pulumi-resource-user-groups-v${pkg.version}-${platform()}.tar.gz`);
    const partial = `${tarball}.${process.pid}.tmp`;
    execFileSync("tar", ["-czf", partial, "--owner=0", "--group=0", "-C", staging, "."]);
    renameSync(partial, tarball);
    process.stdout.write(`${tarball}\n`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (require.main === module) main(process.argv.slice(2));
