// @ts-check
// Reading the file system without throwing: a manifest or directory that cannot be read
// counts as absent.
"use strict";

const fs = require("node:fs");

/**
 * @param {string} file
 * @returns {any} the parsed JSON, or undefined when it cannot be read or parsed
 */
function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * @param {string} dir
 * @returns {string[]} the entries of `dir`, or none when it cannot be read
 */
function safeReaddir(dir) {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

module.exports = { readJson, safeReaddir };
