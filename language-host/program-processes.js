// @ts-check
// The program processes Run has started, so that Cancel and shutdown can interrupt them:
// SIGINT first, SIGKILL after a grace period.
"use strict";

/** How long an interrupted child program gets before it is killed. */
const KILL_GRACE_MS = 5_000;

/**
 * @typedef {object} ProgramProcesses
 * @property {Set<import("node:child_process").ChildProcess>} running  programs still running
 * @property {(child: import("node:child_process").ChildProcess) => void} interrupt
 * @property {() => number} interruptAll  interrupts every running program; returns how many were running
 */

/** @returns {ProgramProcesses} */
function createProgramProcesses() {
  /** @type {Set<import("node:child_process").ChildProcess>} */
  const running = new Set();

  /** @param {import("node:child_process").ChildProcess} child */
  const interrupt = (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGINT");
    setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }, KILL_GRACE_MS).unref();
  };

  const interruptAll = () => {
    for (const child of running) interrupt(child);
    return running.size;
  };

  return { running, interrupt, interruptAll };
}

module.exports = { KILL_GRACE_MS, createProgramProcesses };
