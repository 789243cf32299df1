// @ts-check
// Run: executes the program once, for a preview (dry run) or an update, in a child node
// process, forwards its output and turns its exit into the RunResponse.
"use strict";

const { spawn } = require("node:child_process");
const { programInfo } = require("./program-info.js");
const { programCommand } = require("./program-command.js");
const { KILL_GRACE_MS } = require("./program-processes.js");

/**
 * The exit code with which @pulumi/pulumi/cmd/run says "the error was already shown to
 * the user": the engine should stop without printing anything more (RunResponse.bail).
 */
const EXIT_AFTER_USER_ACTIONABLE_MESSAGE = 32;

/** A W3C traceparent (version 00): what the program's SDK parents its spans on. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The engine's span of this Run call, from the call's gRPC metadata (the engine sends a
 * `traceparent` when it runs with --otel-traces): passed to the program as TRACEPARENT,
 * which @pulumi/pulumi's runner reads to trace the program under it, as Pulumi's own
 * language host does. Undefined when there is none (or it is malformed).
 * @param {any} call
 * @returns {string | undefined}
 */
function traceparentOf(call) {
  const values = typeof call?.metadata?.get === "function" ? call.metadata.get("traceparent") : [];
  const value = Array.isArray(values) ? values[0] : undefined;
  return typeof value === "string" && TRACEPARENT.test(value) ? value : undefined;
}

/**
 * @param {import("./service.js").HostContext} host
 * @param {any} call
 */
async function run(host, call) {
  const { language } = host.sdk;
  const req = call.request;
  const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
  const response = (/** @type {string} */ error, bail = false) => {
    const res = new language.RunResponse();
    res.setError(error);
    res.setBail(bail);
    return res;
  };

  if (!host.settings.engineAddress) return response("when debugging or running explicitly, must call Handshake before Run");
  if (req.getAttachDebugger()) return response("this language host does not support --attach-debugger");

  const command = programCommand(req, info, host.settings);
  if (command.error !== undefined) return response(command.error);
  const { args } = command;
  const traceparent = traceparentOf(call);
  const env = traceparent === undefined ? command.env : { ...command.env, TRACEPARENT: traceparent };
  const { running, interrupt } = host.processes;

  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    running.add(child);
    // A cancelled call (the engine gave up on this Run) stops the program, too.
    call.on("cancelled", () => interrupt(child));

    // Forward the program's output unchanged: the engine shows our stdout/stderr to
    // the user. Watch stderr for V8's out-of-memory report to give a better hint.
    let outOfMemory = false;
    child.stdout?.on("data", (chunk) => process.stdout.write(chunk));
    child.stderr?.on("data", (chunk) => {
      process.stderr.write(chunk);
      const text = String(chunk);
      if (text.includes("<--- Last few GCs --->") || text.includes("Check failed: needs_context && current_scope_ == closure_scope_")) {
        outOfMemory = true;
      }
    });

    child.on("error", (err) => {
      running.delete(child);
      resolve(response(`Problem executing program (could not run language executor): ${err.message}`));
    });
    // "close" (not "exit") fires once the output streams are drained, so nothing is
    // lost. A process the program left behind may hold them open, though: then, like
    // the Go host, stop waiting for the output a few seconds after the exit.
    child.on("exit", (code, signal) => {
      setTimeout(() => child.emit("close", code, signal), KILL_GRACE_MS).unref();
    });
    let settled = false;
    child.on("close", (code, signal) => {
      if (settled) return;
      settled = true;
      running.delete(child);
      if (code === 0) resolve(response(""));
      else if (code === EXIT_AFTER_USER_ACTIONABLE_MESSAGE) resolve(response("", true));
      else if (code === null) resolve(response(`Program exited unexpectedly: signal: ${signal}`));
      else {
        let message = `Program exited with non-zero exit code: ${code}`;
        if (outOfMemory) {
          message +=
            ". Detected a possible out of memory error. Consider increasing the memory available to the nodejs process " +
            "by setting the `nodeargs` runtime option in Pulumi.yaml to `nodeargs: --max-old-space-size=<size>`.";
        }
        resolve(response(message));
      }
    });
  });
}

module.exports = { run, traceparentOf };
