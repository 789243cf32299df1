// The private surroundings of one stack: a directory of its own (0700) under a
// work root, holding the program's work directory and a file backend, and the
// environment the engine needs there (the backend, a passphrase, no update
// check, no plugin downloads; a PULUMI_HOME of its own and the engine's bin
// directory first on PATH when asked). createTestStack and the project's own
// test harness both make stacks' surroundings here.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";

export interface StackDirectoryOptions {
  /** Where the directory is made (created 0700 if missing); default `.user-groups-test` under the current directory. */
  readonly workRoot?: string;
  /** The start of the directory's name (default `stack`). */
  readonly prefix?: string;
  /** A directory put first on PATH (where `pulumi` is). */
  readonly pulumiBinDir?: string;
  /** A PULUMI_HOME inside the directory (default false: the user's, where plugins are). */
  readonly isolatedPulumiHome?: boolean;
  /** The secrets provider's passphrase (default a random one). */
  readonly passphrase?: string;
}

export interface StackDirectory {
  /** The directory (0700): everything below is removed by cleanup(). */
  readonly dir: string;
  readonly workDir: string;
  readonly backendDir: string;
  /** PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE, PULUMI_SKIP_UPDATE_CHECK, PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION, and PULUMI_HOME / PATH when asked. */
  readonly envVars: Record<string, string>;
  /** Removes the directory. Safe to call twice. */
  cleanup(): void;
}

/** Where stacks' directories go unless told otherwise: under the current directory, so a program there finds its node_modules. */
export const DEFAULT_WORK_ROOT = ".user-groups-test";

/** Directories not cleaned up yet: removed when the process exits, whatever way the test ended. */
const undisposed = new Set<string>();
let exitHookInstalled = false;

export function createStackDirectory(options: StackDirectoryOptions = {}): StackDirectory {
  const root = path.resolve(options.workRoot ?? DEFAULT_WORK_ROOT);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const dir = mkdtempSync(path.join(root, `${options.prefix ?? "stack"}-`)); // mode 0700
  undisposed.add(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const left of undisposed) rmSync(left, { recursive: true, force: true });
    });
  }
  const workDir = path.join(dir, "program");
  const backendDir = path.join(dir, "state");
  mkdirSync(workDir, { mode: 0o700 });
  mkdirSync(backendDir, { mode: 0o700 });
  return {
    dir,
    workDir,
    backendDir,
    envVars: {
      PULUMI_BACKEND_URL: `file://${backendDir}`,
      PULUMI_CONFIG_PASSPHRASE: options.passphrase ?? randomBytes(24).toString("base64url"),
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      ...(options.isolatedPulumiHome === true ? { PULUMI_HOME: path.join(dir, "pulumi-home") } : {}),
      ...(options.pulumiBinDir !== undefined ? { PATH: `${options.pulumiBinDir}${path.delimiter}${process.env["PATH"] ?? ""}` } : {}),
    },
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true });
      undisposed.delete(dir);
    },
  };
}
