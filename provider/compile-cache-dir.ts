// Where our processes keep Node's compile cache (see compile-cache.ts), with
// no side effect on import: the automation layer hands the same directory to
// the Node processes the engine starts (the dynamic provider), which load
// @pulumi/pulumi before any code of ours could turn the cache on.
import { chmodSync, lstatSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The per-user cache directory, made (mode 0700) if missing; undefined when it is not this user's alone. */
export function privateCompileCacheDir(env: NodeJS.ProcessEnv, home: string): string | undefined {
  return privateCacheDir(env, home, "compile-cache");
}

/** `name` in the per-user cache (`$XDG_CACHE_HOME` or `~/.cache`, then `pulumi-user-groups/`), made 0700; undefined when not this user's alone. */
export function privateCacheDir(env: NodeJS.ProcessEnv, home: string, name: string): string | undefined {
  const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(home, ".cache");
  const dir = path.join(base, "pulumi-user-groups", name);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stats = lstatSync(dir);
    if (!stats.isDirectory() || (typeof process.getuid === "function" && stats.uid !== process.getuid())) return undefined;
    if ((stats.mode & 0o077) !== 0) chmodSync(dir, 0o700);
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * NODE_COMPILE_CACHE for the processes a run starts, unless the caller (its
 * `envVars` or this process's environment) already chose a cache or turned it off.
 */
export function compileCacheEnv(envVars: Readonly<Record<string, string>> = {}): Record<string, string> {
  for (const name of ["NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"]) {
    if (envVars[name] !== undefined || process.env[name] !== undefined) return {};
  }
  const dir = privateCompileCacheDir(process.env, os.homedir());
  return dir === undefined ? {} : { NODE_COMPILE_CACHE: dir };
}
