// Runs the user-groups-fake-server command (from the TypeScript sources) as a child process.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { type ListeningProcess, watchServer } from "../support/listening-process";

export { type ListeningProcess, watchServer };

const root = join(__dirname, "..", "..");
const hook = join(__dirname, "ts-hook.mjs");
const cli = join(root, "fake-server", "cli.ts");

export type CliRun = ListeningProcess;

export function runCli(args: readonly string[], env?: NodeJS.ProcessEnv): CliRun {
  const child = spawn(
    process.execPath,
    ["--experimental-transform-types", "--disable-warning=MODULE_TYPELESS_PACKAGE_JSON", "--disable-warning=ExperimentalWarning", "--import", hook, cli, ...args],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...(env !== undefined ? { env } : {}) },
  );
  return watchServer(child);
}
