// `npm run release`: the plugin's release, laid out for Pulumi's plugin download.
// Writes OUT/v{VERSION}/ (default OUT: build/release) holding
//   pulumi-resource-user-groups-v{VERSION}-{os}-{arch}.tar.gz  for linux and darwin
//     on amd64 and arm64 (the `pulumi-resource-user-groups` sh launcher) and
//     windows-amd64 (the `pulumi-resource-user-groups.cmd` launcher),
//   pulumi_user_groups-{VERSION}-py3-none-any.whl and pulumi_user_groups-{VERSION}.tar.gz:
//     the Python SDK (sdk/python, `npm run sdk`) as PyPA's `build` makes them
//     (scripts/ensure-python-build), for `pip install` of the file or its URL,
//   SHA256SUMS  (`sha256sum -c SHA256SUMS` checks them all).
// The archives share one payload (scripts/pack-plugin.ts: this package and its
// production dependencies, plain JavaScript run by the user's Node.js >= 22) and
// differ in their launcher only: linux and darwin archives are one archive (their
// launcher is the same), written once and copied.
//
// The engine fetches `{pluginDownloadURL with ${VERSION} replaced}/{archive}`
// (sdk/go/common/workspace/plugins.go, httpSource.Download). The schema's
// pluginDownloadURL is `https://github.com/OWNER/REPO/releases/download/v${VERSION}`
// (provider/plugin/home.ts): upload the files of OUT/v{VERSION}/ as the assets of
// the GitHub release tagged v{VERSION}. Any web server holding OUT under the same
// path serves the same thing: `pulumi plugin install resource user-groups VERSION
// --server https://HOST/PATH/v{VERSION}` (or a pluginDownloadURL of
// `https://HOST/PATH/v${VERSION}`).
//
// Usage: node build/scripts/release.js [--out DIR] [--no-python]
// The last line of stdout is the absolute path of OUT/v{VERSION}.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { archiveName, packageVersion, placeLauncher, stagePayload, writeArchive } from "./pack-plugin";

const root = path.resolve(__dirname, "..", "..");

/** Every platform Pulumi's CLI ships for, in its `{os}-{arch}` words. */
export const RELEASE_PLATFORMS = ["linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64", "windows-amd64"] as const;

export const CHECKSUMS_FILE = "SHA256SUMS";

/** Native addons would tie an archive to one platform: the payload must have none. */
function nativeModules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".node"));
}

/** The Python SDK's wheel and sdist, built from a copy of sdk/python (build writes beside its sources); their names. */
function buildPythonSdk(dir: string): string[] {
  const tools = execFileSync(path.join(root, "scripts", "ensure-python-build"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1)!;
  const work = mkdtempSync(path.join(os.tmpdir(), "user-groups-python-sdk-"));
  try {
    cpSync(path.join(root, "sdk", "python"), path.join(work, "src"), { recursive: true });
    execFileSync(path.join(tools, "bin", "python"), ["-m", "build", "--no-isolation", "--outdir", path.join(work, "dist"), path.join(work, "src")], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const built = readdirSync(path.join(work, "dist")).sort();
    for (const file of built) cpSync(path.join(work, "dist", file), path.join(dir, file));
    return built;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** SHA256SUMS of `files` in `dir`: `<hash>  <name>` a line, as `sha256sum` writes it (docs/plugin.md checks an archive against it). */
export function checksumsText(dir: string, files: readonly string[]): string {
  return `${files.map((name) => `${sha256(path.join(dir, name))}  ${name}`).join("\n")}\n`;
}

/** A copy of an archive written already, atomically as writeArchive writes one. */
function copyArchive(from: string, file: string): void {
  const partial = `${file}.${process.pid}.tmp`;
  copyFileSync(from, partial);
  renameSync(partial, file);
}

function main(argv: string[]): void {
  const outIndex = argv.indexOf("--out");
  const out = path.resolve(outIndex >= 0 && argv[outIndex + 1] ? argv[outIndex + 1]! : path.join(root, "build", "release"));
  const version = packageVersion();
  const dir = path.join(out, `v${version}`);
  rmSync(dir, { recursive: true, force: true });
  const staging = stagePayload();
  try {
    const native = nativeModules(staging);
    if (native.length > 0) throw new Error(`the plugin's payload holds native modules, so one payload cannot serve every platform: ${native.join(", ")}`);
    const files: string[] = [];
    // The archives differ in the launcher only, and every platform but Windows has the same one: the first archive of
    // each launcher is compressed, the others are copies of it (two compressions of the payload rather than five).
    const written = new Map<string, string>();
    for (const platform of RELEASE_PLATFORMS) {
      const name = archiveName(version, platform);
      const launcher = platform.startsWith("windows-") ? "windows" : "posix";
      const same = written.get(launcher);
      if (same === undefined) {
        placeLauncher(staging, platform);
        writeArchive(staging, path.join(dir, name));
        written.set(launcher, name);
      } else {
        copyArchive(path.join(dir, same), path.join(dir, name));
      }
      files.push(name);
      process.stderr.write(`release: ${name}\n`);
    }
    if (!argv.includes("--no-python")) {
      for (const name of buildPythonSdk(dir)) {
        files.push(name);
        process.stderr.write(`release: ${name}\n`);
      }
    }
    const partial = path.join(dir, `.${CHECKSUMS_FILE}.tmp`);
    writeFileSync(partial, checksumsText(dir, files));
    renameSync(partial, path.join(dir, CHECKSUMS_FILE));
    process.stdout.write(`${dir}\n`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (require.main === module) main(process.argv.slice(2));
