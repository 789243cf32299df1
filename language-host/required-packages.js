// @ts-check
// GetRequiredPackages and GetRequiredPlugins: the resource plugins a program needs, found
// in its node_modules, so that the engine can install them before it runs the program.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { readJson, safeReaddir } = require("./files.js");
const { programInfo } = require("./program-info.js");

/**
 * A resource plugin package found under node_modules, as its package.json describes it.
 * @typedef {{ name: string, version: string, server: string,
 *   parameterization?: { name: string, version: string, value: string },
 *   extension?: { name: string, version: string, value: string } }} PluginPackage
 */

/**
 * Finds the resource plugins a program needs: every package under the program
 * directory's node_modules whose package.json says `"pulumi": { "resource": true }`.
 * Unlike the Go host this only walks node_modules trees (not every source directory),
 * and skips unreadable or invalid manifests with a note on stderr.
 * Programs that only use dynamic providers (like ours) need nothing: the engine provides
 * the `pulumi-nodejs` dynamic-provider plugin itself.
 * @param {string} programDirectory
 * @returns {PluginPackage[]}
 */
function findPluginPackages(programDirectory) {
  /** @type {PluginPackage[]} */
  const found = [];
  /** @type {Set<string>} */
  const visited = new Set();
  walkNodeModules(path.join(programDirectory, "node_modules"), visited, found);
  return found;
}

/**
 * Visits every package of one node_modules directory (scoped ones too), once per real path.
 * @param {string} nodeModules
 * @param {Set<string>} visited
 * @param {PluginPackage[]} found
 */
function walkNodeModules(nodeModules, visited, found) {
  let real;
  try {
    real = fs.realpathSync(nodeModules);
  } catch {
    return;
  }
  if (visited.has(real)) return;
  visited.add(real);
  for (const entry of safeReaddir(real)) {
    if (entry.startsWith(".")) continue;
    if (entry.startsWith("@")) {
      for (const scoped of safeReaddir(path.join(real, entry))) visitPackage(path.join(real, entry, scoped), visited, found);
    } else {
      visitPackage(path.join(real, entry), visited, found);
    }
  }
}

/**
 * Records the package in `dir` when it is a resource plugin, then walks its own node_modules.
 * @param {string} dir
 * @param {Set<string>} visited
 * @param {PluginPackage[]} found
 */
function visitPackage(dir, visited, found) {
  const manifest = readJson(path.join(dir, "package.json"));
  const pulumi = manifest?.pulumi;
  if (pulumi && pulumi.resource === true) {
    const name = pulumi.name || (String(manifest.name ?? "").startsWith("@pulumi/") ? manifest.name.slice("@pulumi/".length) : "");
    const version = String(pulumi.version || manifest.version || "");
    if (!name || !version) {
      process.stderr.write(`pulumi-language-nodejs: ignoring ${dir}: a plugin package needs a "pulumi.name" (or an @pulumi/ name) and a version\n`);
    } else {
      /** @param {any} p */
      const param = (p) => (p ? { name: String(p.name ?? ""), version: String(p.version ?? ""), value: String(p.value ?? "") } : undefined);
      found.push({
        name,
        version: version.startsWith("v") ? version : `v${version}`,
        server: String(pulumi.server ?? ""),
        parameterization: param(pulumi.parameterization),
        extension: param(pulumi.extensionParameterization),
      });
    }
  }
  walkNodeModules(path.join(dir, "node_modules"), visited, found);
}

/**
 * GetRequiredPackages: the plugin packages as pulumirpc.PackageDependency messages.
 * @param {import("./sdk.js").Sdk} sdk
 * @param {any} call
 */
function getRequiredPackages(sdk, call) {
  const { language, plugin } = sdk;
  const info = programInfo(call.request.getInfo());
  const res = new language.GetRequiredPackagesResponse();
  res.setPackagesList(
    findPluginPackages(info.programDirectory).map((p) => {
      const dep = new plugin.PackageDependency();
      dep.setName(p.name);
      dep.setKind("resource");
      dep.setVersion(p.version);
      dep.setServer(p.server);
      /** @param {{ name: string, version: string, value: string }} v */
      const param = (v) => {
        const msg = new plugin.PackageParameterization();
        msg.setName(v.name);
        msg.setVersion(v.version);
        msg.setValue(Buffer.from(v.value, "base64")); // []byte in JSON is base64
        return msg;
      };
      if (p.parameterization) dep.setParameterization(param(p.parameterization));
      if (p.extension) dep.setExtension$(param(p.extension));
      return dep;
    }),
  );
  return res;
}

/**
 * GetRequiredPlugins: superseded by GetRequiredPackages; kept for engines that still ask.
 * @param {import("./sdk.js").Sdk} sdk
 * @param {any} call
 */
function getRequiredPlugins(sdk, call) {
  const { language, plugin } = sdk;
  const req = call.request;
  const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
  const res = new language.GetRequiredPluginsResponse();
  res.setPluginsList(
    findPluginPackages(info.programDirectory).map((p) => {
      const dep = new plugin.PluginDependency();
      dep.setName(p.name);
      dep.setKind("resource");
      dep.setVersion(p.version);
      dep.setServer(p.server);
      return dep;
    }),
  );
  return res;
}

module.exports = { findPluginPackages, getRequiredPackages, getRequiredPlugins };
