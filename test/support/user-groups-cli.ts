// Runs the built `user-groups` command as CI does: no terminal (stdin closed),
// output collected.
import { spawn } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "./pulumi-env";

export const USER_GROUPS_CLI = path.join(REPO_ROOT, "dist/provider/cli/user-groups.js");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runUserGroupsCli(args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [USER_GROUPS_CLI, ...args], { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], env: options.env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
