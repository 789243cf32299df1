// Node's on-disk compile cache (node:module, Node >= 22.8) for the processes
// our code runs in: Pulumi's dynamic-provider process and the CLI. Each of
// them starts afresh per operation, and compiling our runtime, zod and undici
// again every time is a good part of its start (figures: docs/performance.md,
// fix 6). Imported first, it covers every module loaded after it.
// Where: NODE_COMPILE_CACHE when the user set it, else a per-user directory
// (mode 0700, `$XDG_CACHE_HOME` or `~/.cache`, then `pulumi-user-groups/compile-cache`).
// Never Node's default in the shared system temp directory, where another local
// user could plant cache entries (code) that our processes would then run.
// NODE_DISABLE_COMPILE_CACHE=1 turns it off. A failure only means no cache.
import nodeModule from "node:module";
import os from "node:os";
import { privateCompileCacheDir } from "./compile-cache-dir";

function enable(): void {
  if (typeof nodeModule.enableCompileCache !== "function") return;
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return;
  if (process.env.NODE_COMPILE_CACHE) {
    nodeModule.enableCompileCache(); // the user's own choice of directory
    return;
  }
  const dir = privateCompileCacheDir(process.env, os.homedir());
  if (dir !== undefined) nodeModule.enableCompileCache(dir);
}

enable();

/**
 * Writes what has been compiled so far. Pulumi ends provider processes with a
 * signal, before Node would write the cache at exit, so the modules that
 * matter are written as soon as they are loaded.
 */
export function saveCompileCache(): void {
  nodeModule.flushCompileCache?.();
}
