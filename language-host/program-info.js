// @ts-check
// What the engine tells us about the program: its directories and entry point
// (pulumirpc.ProgramInfo) and the `runtime.options` of its Pulumi.yaml.
"use strict";

/**
 * The `runtime.options` of Pulumi.yaml that this host understands (same defaults as the
 * Go host). `packagemanager` only matters for InstallDependencies.
 * @typedef {object} NodeOptions
 * @property {boolean} typescript  run TypeScript through ts-node (default true)
 * @property {string} tsconfig     tsconfig path for ts-node ("" = tsconfig.json if present)
 * @property {string[]} nodeargs   extra arguments for node
 * @property {string} packagemanager  auto | npm | yarn | pnpm | bun
 */

/**
 * @param {Record<string, unknown>} options
 * @returns {NodeOptions}
 */
function parseOptions(options) {
  /** @type {NodeOptions} */
  const result = { typescript: true, tsconfig: "", nodeargs: [], packagemanager: "auto" };
  if ("typescript" in options) {
    if (typeof options.typescript !== "boolean") throw new Error("typescript option must be a boolean");
    result.typescript = options.typescript;
  }
  if ("tsconfig" in options) {
    if (typeof options.tsconfig !== "string") throw new Error("tsconfigpath option must be a string");
    result.tsconfig = options.tsconfig;
  }
  if ("nodeargs" in options) {
    if (typeof options.nodeargs !== "string") throw new Error("nodeargs option must be a string");
    result.nodeargs = splitShellWords(options.nodeargs);
  }
  if ("packagemanager" in options) {
    const pm = options.packagemanager;
    if (typeof pm !== "string") throw new Error("packagemanager option must be a string");
    if (!["auto", "npm", "yarn", "pnpm", "bun"].includes(pm)) {
      throw new Error(`packagemanager option must be one of auto, npm, yarn, pnpm or bun, got "${pm}"`);
    }
    result.packagemanager = pm;
  }
  return result;
}

/**
 * Splits `nodeargs` like a POSIX shell would split words (quotes and backslashes), without
 * any expansion.
 * @param {string} text
 * @returns {string[]}
 */
function splitShellWords(text) {
  /** @type {string[]} */
  const words = [];
  let word = "";
  let inWord = false;
  /** @type {string | undefined} */
  let quote;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) word += text.charAt(++i);
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < text.length) {
      word += text.charAt(++i);
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`nodeargs: unterminated quote in ${JSON.stringify(text)}`);
  if (inWord) words.push(word);
  return words;
}

/**
 * The ProgramInfo the engine sends with most requests, as plain values. Older request
 * fields (pwd, program) are the fallback when `info` is absent.
 * @param {any} info a pulumirpc.ProgramInfo or undefined
 * @param {{ pwd?: string, program?: string }} [legacy]
 */
function programInfo(info, legacy = {}) {
  const programDirectory = info?.getProgramDirectory() || legacy.pwd || process.cwd();
  return {
    rootDirectory: info?.getRootDirectory() || programDirectory,
    programDirectory,
    // The engine always sends an entry point; "." means "the directory: package.json main".
    entryPoint: info?.getEntryPoint() || legacy.program || ".",
    /** @type {Record<string, unknown>} */
    options: info?.getOptions()?.toJavaScript() ?? {},
  };
}

module.exports = { parseOptions, splitShellWords, programInfo };
