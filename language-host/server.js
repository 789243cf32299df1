// @ts-check
// The gRPC server: serves the LanguageRuntime service on 127.0.0.1, tells the engine its
// port (the one line the engine reads from stdout) and shuts down on SIGINT/SIGTERM or when
// the engine is gone, giving running programs time to stop.
"use strict";

const { startHealthCheck } = require("./health-check.js");
const { KILL_GRACE_MS } = require("./program-processes.js");
const { createLanguageService } = require("./service.js");

/**
 * @param {import("./sdk.js").Sdk} sdk
 * @param {{ engineAddress: string, tracing: string }} settings
 */
function startServer(sdk, settings) {
  const { grpc } = sdk;
  /**
   * Stops the server and exits after programs have stopped (set once the server exists).
   * @type {() => void}
   */
  let shutdown = () => process.exit(0);
  const { service, processes } = createLanguageService(sdk, settings, () => shutdown());
  const server = new grpc.Server({
    // The engine sends large messages (e.g. config); match its unlimited sizes.
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
  });
  server.addService(sdk.languageGrpc.LanguageRuntimeService, service);

  shutdown = () => {
    const waiting = processes.interruptAll();
    server.forceShutdown();
    if (waiting === 0) process.exit(0);
    // Give interrupted programs time to stop; they are killed after KILL_GRACE_MS anyway.
    const check = setInterval(() => {
      if (processes.running.size === 0) process.exit(0);
    }, 50);
    setTimeout(() => process.exit(0), KILL_GRACE_MS + 1_000).unref();
    check.unref();
  };
  // The engine stops plugins with SIGINT (then SIGKILL after 5 s).
  process.on("SIGINT", () => shutdown());
  process.on("SIGTERM", () => shutdown());

  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (/** @type {Error | null} */ err, /** @type {number} */ port) => {
    if (err) {
      process.stderr.write(`pulumi-language-nodejs: could not start the gRPC server: ${err.message}\n`);
      process.exit(1);
    }
    // The engine reads exactly this line to learn where to connect.
    process.stdout.write(`${port}\n`);
    if (settings.engineAddress) startHealthCheck(grpc, settings.engineAddress, () => shutdown());
  });
}

module.exports = { startServer };
