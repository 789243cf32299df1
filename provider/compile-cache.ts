// Node's on-disk compile cache (node:module, Node >= 22.8) for the processes
// our code starts in: Pulumi's dynamic-provider process and the CLI. Compiling
// zod and undici afresh costs about 50 ms of every such process; from the
// cache, about half. Imported first, it covers every module loaded after it.
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
