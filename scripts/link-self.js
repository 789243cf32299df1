#!/usr/bin/env node
// @ts-check
// In this repository (not when installed as a dependency), makes
// node_modules/pulumi-user-groups point at the repository itself and puts the
// package's commands in node_modules/.bin, so that the examples, the root
// Pulumi.yaml and `npx user-groups ...` work exactly as for a user who
// installed the package, without an install of their own.
// Run by `npm run build:tools` and `npm run typecheck:examples` (so by `npm test`,
// `npm start`, the benchmarks) and by the tests' global setup: never an install
// script, so the published package.json has none and a consumer's install runs
// nothing of ours (npm lists a dependency's `prepare` among its install scripts).
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
// Inside someone's node_modules: npm links our commands itself.
if (root.split(path.sep).includes("node_modules")) process.exit(0);

const link = path.join(root, "node_modules", "pulumi-user-groups");
let current;
try {
  current = fs.readlinkSync(link);
} catch {
  current = undefined;
}
if (current !== "..") {
  fs.rmSync(link, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(link), { recursive: true });
  fs.symlinkSync("..", link, "dir");
}

// Wrappers rather than symlinks: tsc does not make dist/ files executable.
/** @type {{ bin: Record<string, string> }} */
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const binDir = path.join(root, "node_modules", ".bin");
fs.mkdirSync(binDir, { recursive: true });
for (const [name, target] of Object.entries(pkg.bin)) {
  const wrapper = path.join(binDir, name);
  fs.rmSync(wrapper, { force: true });
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec node "$(dirname "$0")/../pulumi-user-groups/${target}" "$@"\n`, { mode: 0o755 });
}
