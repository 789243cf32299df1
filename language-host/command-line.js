// @ts-check
// The command line the engine starts a language plugin with:
// `pulumi-language-nodejs [flags] <engine address>`, flags in Go's `flag` syntax
// (--logtostderr, -v=N, --tracing <url>).
"use strict";

/** Flags that take no value. Any other flag takes a value, either `-f=v` or `-f v`. */
const BOOLEAN_FLAGS = new Set(["logtostderr", "alsologtostderr", "logflow", "version", "help", "h"]);

/**
 * Parses the command line the way Go's `flag` package would for the flags the engine
 * passes to language plugins, and returns the flags and the engine address (the first
 * positional argument).
 * @param {string[]} argv
 * @returns {{ flags: Record<string, string | boolean>, engineAddress: string }}
 */
function parseArgs(argv) {
  /** @type {Record<string, string | boolean>} */
  const flags = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      i++;
      break;
    }
    if (!arg.startsWith("-") || arg === "-") break; // Go stops at the first positional
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    if (eq >= 0) {
      flags[body.slice(0, eq)] = body.slice(eq + 1);
    } else if (BOOLEAN_FLAGS.has(body)) {
      flags[body] = true;
    } else {
      flags[body] = argv[i + 1] ?? "";
      i++;
    }
  }
  return { flags, engineAddress: argv[i] ?? "" };
}

module.exports = { parseArgs };
