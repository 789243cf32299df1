// @ts-check
// The LanguageRuntime service (pulumirpc.LanguageRuntime, proto/pulumi/language.proto):
// which handler answers each method, and the few that fit in a line or two.
"use strict";

const { grpcHandlers } = require("./grpc-handlers.js");
const { startHealthCheck } = require("./health-check.js");
const { installDependencies } = require("./install-dependencies.js");
const { getProgramDependencies } = require("./program-dependencies.js");
const { createProgramProcesses } = require("./program-processes.js");
const { getRequiredPackages, getRequiredPlugins } = require("./required-packages.js");
const { run } = require("./run.js");

/**
 * What the handlers share: the SDK, the engine's address (set by the command line or by
 * Handshake) and tracing URL, and the running programs.
 * @typedef {object} HostContext
 * @property {import("./sdk.js").Sdk} sdk
 * @property {{ engineAddress: string, tracing: string }} settings
 * @property {import("./program-processes.js").ProgramProcesses} processes
 */

/**
 * @param {import("./sdk.js").Sdk} sdk
 * @param {{ engineAddress: string, tracing: string }} settings
 * @param {() => void} onEngineGone called when the engine's health check fails
 */
function createLanguageService(sdk, settings, onEngineGone) {
  const { grpc, language, plugin } = sdk;
  /** @type {HostContext} */
  const host = { sdk, settings: { ...settings }, processes: createProgramProcesses() };
  const { unary, unimplemented } = grpcHandlers(grpc);

  /** The LanguageRuntime implementation, keyed like LanguageRuntimeService. */
  const service = {
    handshake: unary((call) => {
      // Sent when the engine attaches to an already running host (PULUMI_DEBUG_LANGUAGES);
      // a host started by the engine got the address on its command line.
      host.settings.engineAddress = call.request.getEngineAddress() || host.settings.engineAddress;
      if (host.settings.engineAddress) startHealthCheck(grpc, host.settings.engineAddress, onEngineGone);
      return new language.LanguageHandshakeResponse();
    }),

    getPluginInfo: unary(() => {
      const res = new plugin.PluginInfo();
      res.setVersion(sdk.version);
      return res;
    }),

    getRequiredPackages: unary((call) => getRequiredPackages(sdk, call)),
    getRequiredPlugins: unary((call) => getRequiredPlugins(sdk, call)),

    run: unary((call) => run(host, call)),

    installDependencies: (/** @type {any} */ call) => installDependencies(sdk, call),

    runtimeOptionsPrompts: unary(() => new language.RuntimeOptionsResponse()),

    about: unary(() => {
      const res = new language.AboutResponse();
      res.setExecutable(process.execPath);
      res.setVersion(process.version);
      res.getMetadataMap().set("packagemanager", "npm");
      return res;
    }),

    getProgramDependencies: unary((call) => getProgramDependencies(sdk, call)),

    cancel: unary(() => {
      host.processes.interruptAll();
      return new sdk.empty.Empty();
    }),

    // Code generation, packaging and plugins written in Node.js are out of scope.
    template: unimplemented("Template"),
    runPlugin: unimplemented("RunPlugin"),
    generateProgram: unimplemented("GenerateProgram"),
    generateProject: unimplemented("GenerateProject"),
    generatePackage: unimplemented("GeneratePackage"),
    pack: unimplemented("Pack"),
    link: unimplemented("Link"),
  };

  return { service, processes: host.processes };
}

module.exports = { createLanguageService };
