// `npm run sdk`: the plugin's SDKs, checked in under sdk/, from the schema the
// plugin serves (provider/plugin/schema.ts) with `pulumi package gen-sdk`:
//   sdk/schema.json          the package schema (= `pulumi package get-schema user-groups`)
//   sdk/go.mod, go.sum       the Go module GO_MODULE (provider/plugin/home.ts); Go tags it sdk/vX.Y.Z
//   sdk/go/usergroups/       its package, imported as GO_IMPORT_PATH
//   sdk/python/              pulumi_user_groups: pyproject.toml, `python -m build` makes wheel and sdist
//   sdk/dotnet/              PulumiUserGroups.UserGroups.csproj
// Each SDK names the plugin's version and pluginDownloadURL, so a program using it
// gets the plugin installed by the engine on its first run. Also keeps package.json's
// `repository`, `homepage` and `bugs` equal to the canonical home (home.ts).
//
// Needs the engine (scripts/ensure-pulumi), the generating language hosts
// (scripts/ensure-sdkgen-hosts) and Go for `go mod tidy` (modules the engine
// build already fetched). test/plugin/sdk.test.ts regenerates into a temporary
// directory and compares, so the schema and the SDKs cannot drift.
//
// Usage: node build/scripts/write-sdk.js [--out DIR]   (default: sdk/, and package.json is synced)
// The last line of stdout is the absolute path of the SDK directory.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { GO_MODULE, PACKAGE_JSON_HOME } from "../provider/plugin/home";
import { packageSchema } from "../provider/plugin/schema";

const root = path.resolve(__dirname, "..", "..");

export const SDK_LANGUAGES = ["go", "python", "dotnet"] as const;

/** Where the Go package goes inside the SDK folder (GO_IMPORT_PATH = GO_MODULE + "/" + this). */
export const GO_PACKAGE_DIR = "go/usergroups";

function lastLine(stdout: string): string {
  return stdout.trim().split("\n").at(-1) ?? "";
}

function ensure(script: string): string {
  const dir = lastLine(execFileSync(path.join(root, "scripts", script), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
  if (!dir) throw new Error(`scripts/${script} printed no directory`);
  return dir;
}

/** The github.com/pulumi/pulumi/sdk/v3 version the Go SDK requires: the engine's, which package-lock.json pins. */
function pulumiVersion(): string {
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
  const version = lock.packages["node_modules/@pulumi/pulumi"]?.version;
  if (!version) throw new Error("package-lock.json locks no @pulumi/pulumi");
  return version;
}

/** package.json's repository, homepage and bugs, set to the canonical home; true when it changed. */
export function syncPackageJson(file: string): boolean {
  const text = readFileSync(file, "utf8");
  const pkg = JSON.parse(text) as Record<string, unknown>;
  const home: Record<string, unknown> = PACKAGE_JSON_HOME;
  const inPlace = Object.keys(home).every((key) => key in pkg);
  const synced: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(pkg)) {
    if (key in home) {
      if (inPlace) synced[key] = home[key];
      continue;
    }
    synced[key] = value;
    // New fields go where npm puts them: after `license`.
    if (key === "license" && !inPlace) Object.assign(synced, home);
  }
  if (!inPlace && !("license" in pkg)) Object.assign(synced, home);
  const next = `${JSON.stringify(synced, null, 2)}\n`;
  if (next === text) return false;
  writeFileSync(file, next);
  return true;
}

/**
 * The generator writes `[project.license] text = "..."`, a form setuptools warns
 * is deprecated and stops building on 2027-02-18: the SPDX string instead, which
 * needs setuptools >= 77. Fails when the generator's output no longer has that form.
 */
export function spdxLicense(pyproject: string): string {
  const table = /^ *\[project\.license\]\n *text = ("[^"\n]+")\n/m;
  const license = table.exec(pyproject)?.[1];
  const backend = 'requires = ["setuptools>=61.0"]';
  if (license === undefined || !pyproject.includes(backend) || !pyproject.includes("\n  requires-python = ")) {
    throw new Error("sdk/python/pyproject.toml: the generator's license table or build backend changed; review spdxLicense()");
  }
  return pyproject
    .replace(table, "")
    .replace("\n  requires-python = ", `\n  license = ${license}\n  requires-python = `)
    .replace(backend, 'requires = ["setuptools>=77.0"]');
}

function goModFile(): string {
  return [
    `module ${GO_MODULE}`,
    "",
    // `go mod tidy` raises it to what the Pulumi SDK needs.
    "go 1.21",
    "",
    "require (",
    "\tgithub.com/blang/semver v3.5.1+incompatible",
    `\tgithub.com/pulumi/pulumi/sdk/v3 v${pulumiVersion()}`,
    ")",
    "",
  ].join("\n");
}

function main(argv: string[]): void {
  const outIndex = argv.indexOf("--out");
  const own = outIndex < 0;
  const out = path.resolve(own ? path.join(root, "sdk") : argv[outIndex + 1]!);
  if (existsSync(out) && readdirSync(out).length > 0 && !existsSync(path.join(out, "schema.json"))) {
    throw new Error(`${out} is not empty and holds no schema.json: not an SDK folder this script wrote, left alone`);
  }
  const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;
  const pulumiBin = ensure("ensure-pulumi");
  const sdkgenBin = ensure("ensure-sdkgen-hosts");

  const staging = mkdtempSync(path.join(os.tmpdir(), "user-groups-sdk-"));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: [pulumiBin, sdkgenBin, process.env.PATH ?? ""].join(path.delimiter),
      PULUMI_HOME: path.join(staging, "pulumi-home"),
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    };
    const sdk = path.join(staging, "sdk");
    mkdirSync(sdk);
    writeFileSync(path.join(sdk, "schema.json"), `${JSON.stringify(packageSchema(version), null, 2)}\n`);
    const generated = path.join(staging, "generated");
    for (const language of SDK_LANGUAGES) {
      execFileSync("pulumi", ["package", "gen-sdk", path.join(sdk, "schema.json"), "--language", language, "--out", generated], {
        cwd: staging,
        env,
        stdio: ["ignore", "ignore", "pipe"],
      });
    }
    mkdirSync(path.join(sdk, path.dirname(GO_PACKAGE_DIR)), { recursive: true });
    renameSync(path.join(generated, "go"), path.join(sdk, GO_PACKAGE_DIR));
    renameSync(path.join(generated, "python"), path.join(sdk, "python"));
    renameSync(path.join(generated, "dotnet"), path.join(sdk, "dotnet"));
    // pyproject.toml's `readme` is beside it; the generator writes it inside the package only.
    copyFileSync(path.join(sdk, "python", "pulumi_user_groups", "README.md"), path.join(sdk, "python", "README.md"));
    const pyproject = path.join(sdk, "python", "pyproject.toml");
    writeFileSync(pyproject, spdxLicense(readFileSync(pyproject, "utf8")));

    writeFileSync(path.join(sdk, "go.mod"), goModFile());
    execFileSync("go", ["mod", "tidy"], {
      cwd: sdk,
      env: { ...process.env, GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local", CGO_ENABLED: "0" },
      stdio: ["ignore", "ignore", "inherit"],
    });

    rmSync(out, { recursive: true, force: true });
    cpSync(sdk, out, { recursive: true });
  } catch (error) {
    const failed = error as { stderr?: Buffer | string };
    if (failed.stderr) process.stderr.write(failed.stderr);
    throw error;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (own && syncPackageJson(path.join(root, "package.json"))) process.stderr.write("write-sdk: package.json's repository, homepage and bugs set to the canonical home\n");
  process.stdout.write(`${out}\n`);
}

if (require.main === module) main(process.argv.slice(2));
