// @ts-check
// InstallDependencies (`pulumi install`, `pulumi new`): runs the package manager's install,
// but only when the program's @pulumi/pulumi cannot be resolved yet, i.e. the dependencies
// are evidently not installed. The Go host always reinstalls.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { parseOptions, programInfo } = require("./program-info.js");
const { findSdkDir } = require("./sdk.js");

/**
 * @param {string} preference auto | npm | yarn | pnpm | bun
 * @param {string} dir
 */
function choosePackageManager(preference, dir) {
  if (preference !== "auto") return preference;
  if (fs.existsSync(path.join(dir, "yarn.lock"))) return "yarn";
  if (fs.existsSync(path.join(dir, "pnpm-lock.yaml"))) return "pnpm";
  if (fs.existsSync(path.join(dir, "bun.lock")) || fs.existsSync(path.join(dir, "bun.lockb"))) return "bun";
  return "npm";
}

/**
 * The InstallDependencies handler: streams the package manager's output to the engine.
 * @param {import("./sdk.js").Sdk} sdk
 * @param {any} call a server-streaming call of InstallDependenciesResponse
 */
function installDependencies(sdk, call) {
  const { grpc, language } = sdk;
  const info = programInfo(call.request.getInfo(), { pwd: call.request.getDirectory() });
  /** @param {"stdout" | "stderr"} stream @param {string | Buffer} data */
  const send = (stream, data) => {
    const res = new language.InstallDependenciesResponse();
    if (stream === "stdout") res.setStdout(Buffer.from(data));
    else res.setStderr(Buffer.from(data));
    call.write(res);
  };
  /** @param {string} message */
  const fail = (message) => call.emit("error", { code: grpc.status.UNKNOWN, details: message });

  let opts;
  try {
    opts = parseOptions(info.options);
  } catch (err) {
    return fail(`failed to parse options: ${/** @type {Error} */ (err).message}`);
  }
  const dir = info.programDirectory;
  if (!fs.existsSync(path.join(dir, "package.json"))) {
    send("stdout", `No package.json in ${dir}: nothing to install.\n`);
    return call.end();
  }
  if (findSdkDir(dir)) {
    send("stdout", "Dependencies are already installed (@pulumi/pulumi resolves); skipping the package manager.\n");
    return call.end();
  }
  const pm = choosePackageManager(opts.packagemanager, dir);
  send("stdout", `Installing dependencies with ${pm}...\n\n`);
  const child = spawn(pm, ["install"], { cwd: dir, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk) => send("stdout", chunk));
  child.stderr?.on("data", (chunk) => send("stderr", chunk));
  child.on("error", (err) => fail(`${pm} install failed to start: ${err.message}`));
  child.on("close", (code) => {
    if (code === 0) {
      send("stdout", "Finished installing dependencies\n\n");
      call.end();
    } else {
      fail(`${pm} install exited with code ${code}`);
    }
  });
}

module.exports = { choosePackageManager, installDependencies };
