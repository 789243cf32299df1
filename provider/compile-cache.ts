// Node's on-disk compile cache (node:module, Node >= 22.8) for the processes
// our code runs in: Pulumi's dynamic-provider process and the CLI. Compiling
// our runtime, zod and undici afresh costs a provider process about 165 ms;
// from the cache, about 110 ms. Imported first, it covers every module loaded
// after it.
// NODE_COMPILE_CACHE chooses the directory, NODE_DISABLE_COMPILE_CACHE=1 turns
// it off (Node's own switches); without either, Node uses its default in the
// system temp directory. A failure only means no cache.
import nodeModule from "node:module";

nodeModule.enableCompileCache?.();

/**
 * Writes what has been compiled so far. Pulumi ends provider processes with a
 * signal, before Node would write the cache at exit, so the modules that
 * matter are written as soon as they are loaded.
 */
export function saveCompileCache(): void {
  nodeModule.flushCompileCache?.();
}
