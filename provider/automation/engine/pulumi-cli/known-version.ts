// The Pulumi CLI's version, remembered per binary. The Automation API's
// `PulumiCommand.get` starts `pulumi version` in every process that runs the
// engine (each `user-groups` command, each service process): about 0.3 s of CPU
// and as much wall time before the first command. The version of the `pulumi`
// that PATH names is kept in the per-user cache (0700 directory, 0600 file),
// keyed by the binary's path, inode, size, change and modification times and
// the @pulumi/pulumi version checking it, so a replaced or upgraded binary, or
// another SDK, is asked again. The cache decides nothing but which flags the
// Automation API passes; it is read as a bounded regular file and only a
// version string is taken from it.
import { createHash, randomBytes } from "node:crypto";
import { accessSync, constants, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { privateCacheDir } from "../../../compile-cache-dir";
import { readRegularFileIfPresent } from "../../backend";

const VERSION = /^v?\d{1,4}\.\d{1,4}\.\d{1,6}(?:-[0-9A-Za-z.-]{1,64})?(?:\+[0-9A-Za-z.-]{1,64})?$/;
const MAX_ENTRIES = 16;
const CACHE_FILE = "pulumi-versions.json";

/** The `pulumi` a spawn of "pulumi" runs with this PATH: the first executable on it; undefined when PATH is unusual (relative or empty entries). */
export function pulumiOnPath(searchPath: string | undefined = process.env.PATH): string | undefined {
  if (process.platform === "win32" || !searchPath) return undefined;
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) return undefined; // "" or "." is the working directory: not ours to remember
    const candidate = path.join(dir, "pulumi");
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      continue;
    }
  }
  return undefined;
}

/** What identifies the binary (and the SDK judging it): any change asks the CLI again. */
export function binaryKey(binary: string): string | undefined {
  try {
    const real = realpathSync(binary);
    const stats = statSync(real);
    const sdk = (require("@pulumi/pulumi/package.json") as { version?: string }).version ?? "";
    return createHash("sha256").update(JSON.stringify([binary, real, stats.dev, stats.ino, stats.size, stats.mtimeMs, stats.ctimeMs, sdk])).digest("hex");
  } catch {
    return undefined;
  }
}

function cacheFile(): string | undefined {
  const dir = privateCacheDir(process.env, os.homedir(), "engine");
  return dir === undefined ? undefined : path.join(dir, CACHE_FILE);
}

function entries(file: string): Record<string, string> {
  try {
    const bytes = readRegularFileIfPresent(file, 16 * 1024, "Pulumi version cache");
    if (bytes === undefined) return {};
    const parsed = JSON.parse(bytes.toString("utf8")) as unknown;
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter(([key, value]) => /^[0-9a-f]{64}$/.test(key) && typeof value === "string" && VERSION.test(value)));
  } catch {
    return {};
  }
}

/** The version remembered for the binary of `key`, if any. */
export function rememberedVersion(key: string): string | undefined {
  const file = cacheFile();
  return file === undefined ? undefined : entries(file)[key];
}

/** Remembers the version the CLI of `key` printed, once the SDK's check passed (best effort: a failure only means asking again next time). */
export function rememberVersion(key: string, version: string): void {
  if (!VERSION.test(version)) return;
  const file = cacheFile();
  if (file === undefined) return;
  const kept = Object.entries(entries(file)).filter(([other]) => other !== key).slice(-(MAX_ENTRIES - 1));
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(temporary, JSON.stringify(Object.fromEntries([...kept, [key, version]])), { mode: 0o600, flag: "wx" });
    renameSync(temporary, file);
  } catch {
    rmSync(temporary, { force: true });
  }
}

/** A SemVer of the semver @pulumi/pulumi itself uses (the Automation API compares with its methods). */
export function sdkSemver(version: string): unknown {
  const semver = createRequire(require.resolve("@pulumi/pulumi/package.json"))("semver") as { parse(v: string): unknown };
  return semver.parse(version);
}
