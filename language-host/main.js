// @ts-check
// pulumi-language-nodejs: a minimal Node.js language host for the Pulumi engine (README.md
// says why it exists and when it can go). The entry point: reads the command line, loads
// the @pulumi/pulumi of the directory the engine starts it in, answers --version or
// starts the gRPC server.
//
// Protocol (pulumirpc.LanguageRuntime, proto/pulumi/language.proto), as the engine uses it:
//   * The engine starts the plugin as `pulumi-language-nodejs [flags] <engine address>`
//     and reads one line from stdout: the port of a gRPC server on 127.0.0.1. Everything
//     printed later on stdout or stderr is shown to the user as program output.
//   * It then calls GetRequiredPackages (to install provider plugins), Run (once per
//     preview/update), and GetPluginInfo/About/... as needed, and finally interrupts us.
//   * Run does not execute the program in this process: it starts
//     `node @pulumi/pulumi/cmd/run <flags> <entry point>`, the SDK's own entry point, which
//     connects to the engine's resource monitor itself.
"use strict";

const { parseArgs } = require("./command-line.js");
const { loadSdk } = require("./sdk.js");
const { startServer } = require("./server.js");

function main() {
  const { flags, engineAddress } = parseArgs(process.argv.slice(2));
  const tracing = typeof flags.tracing === "string" ? flags.tracing : "";

  let sdk;
  try {
    sdk = loadSdk(process.cwd());
  } catch (err) {
    process.stderr.write(`${/** @type {Error} */ (err).message}\n`);
    process.exit(1);
  }
  if (flags.version) {
    process.stdout.write(`${sdk.version}\n`);
    return;
  }
  startServer(sdk, { engineAddress, tracing });
}

main();
