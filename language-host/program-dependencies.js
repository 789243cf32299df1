// @ts-check
// GetProgramDependencies (`pulumi about`): the program's direct dependencies and the
// versions installed.
"use strict";

const { createRequire } = require("node:module");
const path = require("node:path");
const { readJson } = require("./files.js");
const { programInfo } = require("./program-info.js");

/**
 * The direct dependencies of the program (package.json dependencies and devDependencies)
 * with the versions installed.
 * @param {string} programDirectory
 * @returns {Array<{ name: string, version: string }>}
 */
function programDependencies(programDirectory) {
  const manifest = readJson(path.join(programDirectory, "package.json"));
  if (!manifest) throw new Error(`no readable package.json in ${programDirectory}`);
  const requireFromProgram = createRequire(path.join(programDirectory, "noop.js"));
  const names = Object.keys({ ...manifest.devDependencies, ...manifest.dependencies }).sort();
  return names.map((name) => {
    const declared = String(manifest.dependencies?.[name] ?? manifest.devDependencies?.[name] ?? "");
    // Prefer the installed version; fall back to the declared range when not installed.
    for (const dir of requireFromProgram.resolve.paths(name) ?? []) {
      const installed = readJson(path.join(dir, name, "package.json"));
      if (installed?.version) return { name, version: String(installed.version) };
    }
    return { name, version: declared };
  });
}

/**
 * GetProgramDependencies: the dependencies as pulumirpc.DependencyInfo messages.
 * @param {import("./sdk.js").Sdk} sdk
 * @param {any} call
 */
function getProgramDependencies(sdk, call) {
  const { language } = sdk;
  const req = call.request;
  const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
  const res = new language.GetProgramDependenciesResponse();
  res.setDependenciesList(
    programDependencies(info.programDirectory).map((d) => {
      const dep = new language.DependencyInfo();
      dep.setName(d.name);
      dep.setVersion(d.version);
      return dep;
    }),
  );
  return res;
}

module.exports = { programDependencies, getProgramDependencies };
