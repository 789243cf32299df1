// Runs the user-groups-fake-server command (from the TypeScript sources) as a child process.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const root = join(__dirname, "..", "..");
const hook = join(__dirname, "ts-hook.mjs");
const cli = join(root, "fake-server", "cli.ts");

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the URL from the `listening on` line. */
  listening: Promise<string>;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

export function runCli(args: readonly string[], env?: NodeJS.ProcessEnv): CliRun {
  const child = spawn(
    process.execPath,
    ["--experimental-transform-types", "--disable-warning=MODULE_TYPELESS_PACKAGE_JSON", "--disable-warning=ExperimentalWarning", "--import", hook, cli, ...args],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...(env !== undefined ? { env } : {}) },
  );
  return watchServer(child);
}

/** Follows a started fake-server process (any way of starting it, e.g. an installed bin) until its `listening on` line. */
export function watchServer(child: ChildProcess): CliRun {
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8");
  child.stderr?.setEncoding("utf8");
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: string) => {
      out += chunk;
      const match = /^listening on (http:\/\/\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.stderr?.on("data", (chunk: string) => {
      err += chunk;
    });
    void exited.then((code) => reject(new Error(`CLI exited (${code}) before listening: ${err}`)));
  });
  listening.catch(() => {});
  return { child, stdout: () => out, stderr: () => err, listening, exited };
}
