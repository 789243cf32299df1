// Stack config set without putting any value on a command line (CONTRACT R6: a
// child process's arguments are visible to every local user). The Automation
// API's own setAllConfig runs `pulumi config set-all --secret KEY=VALUE`; this
// runs `pulumi config set --stack S [--secret] KEY` once per key and writes the
// value to its standard input, with the workspace's environment and directory.
// Also: which values a run must keep secret (secretValuesOf: the passphrase, secret
// config, secret-named variables, the backend URL's password), handed to the
// scrubbing of every error our automation code throws. The scrubbing itself has
// one home, client/redact.ts (scrubText, scrubSecrets), which callers import.
import { spawn } from "node:child_process";
import path from "node:path";
import type { ConfigMap, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { scrubText } from "../../client/redact";
import { backendUrlSecrets } from "../backend";
import { UserGroupsError } from "../../wire/errors";
import { WrongPassphraseError } from "./pulumi-cli";

/** Variables of ours and Pulumi's whose values are secrets wherever they appear. */
const SECRET_ENV_NAME = /^(USER_GROUPS_API_KEY(_\w+)?|PULUMI_CONFIG_PASSPHRASE|PULUMI_ACCESS_TOKEN|PGPASSWORD)$/;

export interface SecretSources {
  readonly passphrase?: string;
  /** A backend URL, whose password (in any spelling) is a secret. */
  readonly backendUrl?: string | undefined;
  readonly envVars?: Record<string, string>;
  readonly config?: ConfigMap;
}

/**
 * Every secret value a run knows of: secret config values, the passphrase,
 * secret-named variables of its environment, and the password of each backend
 * URL it may use (the option, PULUMI_BACKEND_URL of envVars and of the process).
 */
export function secretValuesOf(options: SecretSources, env: NodeJS.ProcessEnv = process.env): string[] {
  const values = new Set<string>();
  for (const entry of Object.values(options.config ?? {})) if (entry.secret) values.add(entry.value);
  if (options.passphrase !== undefined) values.add(options.passphrase);
  for (const source of [env, options.envVars ?? {}]) {
    for (const [name, value] of Object.entries(source)) if (value !== undefined && SECRET_ENV_NAME.test(name)) values.add(value);
  }
  for (const url of [options.backendUrl, options.envVars?.PULUMI_BACKEND_URL, env.PULUMI_BACKEND_URL]) {
    for (const secret of backendUrlSecrets(url)) values.add(secret);
  }
  values.delete("");
  // Longest first, so that a secret containing another is replaced whole.
  return [...values].sort((a, b) => b.length - a.length);
}

/** What LocalWorkspace would run the CLI with: its command, directory and environment. */
function commandOf(workspace: LocalWorkspace): { command: string; cwd: string; env: NodeJS.ProcessEnv } {
  const command = workspace.pulumiCommand.command;
  const env: NodeJS.ProcessEnv = { ...process.env, ...(workspace.pulumiHome ? { PULUMI_HOME: workspace.pulumiHome } : {}), ...workspace.envVars };
  // As PulumiCommand.run: the CLI's own directory first, for its bundled plugins.
  if (path.isAbsolute(command)) env.PATH = `${path.dirname(command)}${path.delimiter}${env.PATH ?? ""}`;
  env.PULUMI_AUTOMATION_API = "true";
  return { command, cwd: workspace.workDir, env };
}

function runWithInput(command: string, args: readonly string[], input: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["pipe", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      if (stderr.length < 16_384) stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
    child.stdin.on("error", () => {}); // a CLI that exits early: its exit code tells
    child.stdin.end(input);
  });
}

/** Sets each key of `config` on the stack, values through stdin only. */
export async function setStackConfig(stack: Stack, config: ConfigMap): Promise<void> {
  const { command, cwd, env } = commandOf(stack.workspace as LocalWorkspace);
  for (const [key, value] of Object.entries(config)) {
    const args = ["config", "set", "--stack", stack.name, value.secret ? "--secret" : "--plaintext", "--non-interactive", "--", key];
    const { code, stderr } = await runWithInput(command, args, value.value, cwd, env);
    if (code !== 0) {
      const detail = scrubText(stderr.trim(), value.secret ? [value.value] : []);
      if (/incorrect passphrase/i.test(detail)) throw new WrongPassphraseError(stack.name, { cause: new Error(detail) });
      throw new UserGroupsError("config_set_failed", `pulumi config set ${key} on stack "${stack.name}" failed (exit ${code ?? "by signal"})${detail ? `: ${detail}` : ""}`);
    }
  }
}
