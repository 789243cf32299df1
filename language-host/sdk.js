// @ts-check
// Loading @pulumi/pulumi: everything protocol-specific (gRPC, the generated message
// classes) comes from the program's own @pulumi/pulumi, because this host lives outside
// any node_modules tree.
"use strict";

const fs = require("node:fs");
const { createRequire } = require("node:module");
const path = require("node:path");
const { readJson } = require("./files.js");

/**
 * The pieces of @pulumi/pulumi this host needs: its directory, version, gRPC library and
 * generated protobuf stubs. Typed loosely: they are generated CommonJS without types here.
 * @typedef {object} Sdk
 * @property {string} dir
 * @property {string} version
 * @property {any} grpc
 * @property {any} languageGrpc
 * @property {any} language
 * @property {any} plugin
 * @property {any} empty
 */

/**
 * Finds the directory of the @pulumi/pulumi package that `dir` resolves (Node's module
 * resolution, i.e. node_modules in `dir` or any parent), or undefined.
 * @param {string} dir
 * @returns {string | undefined}
 */
function findSdkDir(dir) {
  const requireFromDir = createRequire(path.join(dir, "noop.js"));
  let entry;
  try {
    entry = requireFromDir.resolve("@pulumi/pulumi");
  } catch {
    return undefined;
  }
  // Walk up from the main module to the package root rather than resolving
  // "@pulumi/pulumi/package.json", which a package "exports" map may not expose.
  for (let d = path.dirname(entry); d !== path.dirname(d); d = path.dirname(d)) {
    const manifest = path.join(d, "package.json");
    if (fs.existsSync(manifest) && readJson(manifest)?.name === "@pulumi/pulumi") return d;
  }
  return undefined;
}

/**
 * Loads the gRPC library and stubs from the @pulumi/pulumi that `dir` resolves. gRPC is
 * loaded relative to @pulumi/pulumi itself so that the server and the stubs share one copy.
 * @param {string} dir
 * @returns {Sdk}
 */
function loadSdk(dir) {
  const sdkDir = findSdkDir(dir);
  if (!sdkDir) {
    throw new Error(
      `pulumi-language-nodejs: cannot find @pulumi/pulumi from ${dir}. ` +
        `It looks like the Pulumi SDK has not been installed: run npm install in ${dir}.`,
    );
  }
  const requireFromSdk = createRequire(path.join(sdkDir, "package.json"));
  return {
    dir: sdkDir,
    version: String(readJson(path.join(sdkDir, "package.json"))?.version ?? ""),
    grpc: requireFromSdk("@grpc/grpc-js"),
    languageGrpc: requireFromSdk("./proto/language_grpc_pb.js"),
    language: requireFromSdk("./proto/language_pb.js"),
    plugin: requireFromSdk("./proto/plugin_pb.js"),
    empty: requireFromSdk("google-protobuf/google/protobuf/empty_pb.js"),
  };
}

module.exports = { findSdkDir, loadSdk };
