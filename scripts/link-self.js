#!/usr/bin/env node
// @ts-check
// In this repository (not when installed as a dependency), makes
// node_modules/pulumi-user-groups point at the repository itself, so that the
// examples and the root Pulumi.yaml import "pulumi-user-groups" exactly as a
// user's program does, without an npm install of their own.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
// Installed as someone's dependency: nothing to do.
if (root.split(path.sep).includes("node_modules")) process.exit(0);

const link = path.join(root, "node_modules", "pulumi-user-groups");
try {
  if (fs.readlinkSync(link) === "..") process.exit(0);
  fs.rmSync(link, { recursive: true, force: true });
} catch {
  // absent
}
fs.mkdirSync(path.dirname(link), { recursive: true });
fs.symlinkSync("..", link, "dir");
