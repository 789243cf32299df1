// @ts-check
// The command that runs a program for Run: `node [nodeargs] @pulumi/pulumi/cmd/run <flags>
// <entry point> [args]`, the SDK's own entry point, and its environment (config as
// PULUMI_CONFIG, TypeScript settings). The program connects to the engine itself.
"use strict";

const { createRequire } = require("node:module");
const path = require("node:path");
const { parseOptions } = require("./program-info.js");

/**
 * Converts the engine's config map to the JSON the SDK reads from PULUMI_CONFIG. Keys come
 * as `<namespace>:<name>`; like the Go host we present them in the older
 * `<namespace>:config:<name>` form, which every @pulumi/pulumi version understands.
 * @param {Array<[string, string]>} entries
 * @returns {string}
 */
function configJson(entries) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const [key, value] of entries) {
    const parts = key.split(":");
    if (parts.length === 2) out[`${parts[0]}:config:${parts[1]}`] = value;
    else if (parts.length === 3 && parts[1] === "config") out[key] = value;
    else throw new Error(`could not parse ${key} as a configuration key (configuration keys should be of the form \`<namespace>:<name>\`)`);
  }
  return JSON.stringify(out);
}

/**
 * The node arguments and environment for one RunRequest, or the error message to answer
 * Run with when they cannot be made.
 * @param {any} req a pulumirpc.RunRequest
 * @param {ReturnType<typeof import("./program-info.js").programInfo>} info
 * @param {{ engineAddress: string, tracing: string }} settings
 * @returns {{ error: string } | { error?: undefined, args: string[], env: NodeJS.ProcessEnv }}
 */
function programCommand(req, info, settings) {
  /** @type {import("./program-info.js").NodeOptions} */
  let opts;
  try {
    opts = parseOptions(info.options);
  } catch (err) {
    return { error: /** @type {Error} */ (err).message };
  }
  /** @type {NodeJS.ProcessEnv} */
  let env;
  try {
    env = {
      ...process.env,
      PULUMI_CONFIG: configJson(req.getConfigMap().getEntryList()),
      PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(req.getConfigsecretkeysList()),
    };
  } catch (err) {
    return { error: `failed to serialize configuration: ${/** @type {Error} */ (err).message}` };
  }
  if (opts.typescript) env.PULUMI_NODEJS_TYPESCRIPT = "true";
  if (opts.tsconfig) env.PULUMI_NODEJS_TSCONFIG_PATH = opts.tsconfig;

  // The SDK's runner must come from the program's own @pulumi/pulumi (the program talks
  // to the engine through that copy), not necessarily the one this host loaded.
  let runPath = process.env.PULUMI_LANGUAGE_NODEJS_RUN_PATH || "@pulumi/pulumi/cmd/run";
  try {
    runPath = createRequire(path.join(info.programDirectory, "noop.js")).resolve(runPath);
  } catch {
    return { error: `It looks like the Pulumi SDK has not been installed. Have you run pulumi install (or npm install in ${info.programDirectory})?` };
  }

  /** @type {string[]} */
  const args = [...opts.nodeargs, runPath];
  /** @param {string} flag @param {string} value */
  const flag = (flag, value) => {
    if (value) args.push(`--${flag}`, value);
  };
  flag("monitor", req.getMonitorAddress());
  flag("engine", settings.engineAddress);
  flag("organization", req.getOrganization());
  flag("project", req.getProject());
  flag("root-directory", info.rootDirectory);
  flag("stack", req.getStack());
  flag("pwd", info.programDirectory);
  if (req.getDryrun()) args.push("--dry-run");
  flag("parallel", String(req.getParallel()));
  flag("tracing", settings.tracing);
  args.push(info.entryPoint, ...req.getArgsList());
  return { args, env };
}

module.exports = { configJson, programCommand };
