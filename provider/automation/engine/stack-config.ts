// Stack config set without putting any value on a command line (CONTRACT R6: a
// child process's arguments are visible to every local user). The Automation
// API's own setAllConfig runs `pulumi config set-all --secret KEY=VALUE`; this
// runs `pulumi config set --stack S [--secret] KEY` once per key and writes the
// value to its standard input, with the workspace's environment and directory.
// Also: every error our automation code throws has each secret it knows of
// scrubbed from it (message, stack, a CommandError's captured output, and the
// same for each error of its `cause` chain), the backend URL's password included.
import { spawn } from "node:child_process";
import path from "node:path";
import type { ConfigMap, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { Redactor } from "../../client/redact";
import { backendUrlSecrets } from "../backend";
import { UserGroupsError } from "../../wire/errors";
import { WrongPassphraseError } from "./engine-errors";

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

/** The text with every secret (and anything shaped like a token) replaced. */
export function scrubText(text: string, secrets: readonly string[]): string {
  const redactor = new Redactor();
  for (const secret of secrets) redactor.add(secret);
  return redactor.text(text);
}

/**
 * The same error (class and fields kept, so `instanceof` still works) with every
 * secret (and anything shaped like a token) replaced: in its message and stack,
 * and in every string it holds, however deep (a CommandError's `commandResult`,
 * the process error inside it with its own stdout and stderr, the `cause` chain).
 */
export function scrubSecrets(error: unknown, secrets: readonly string[]): unknown {
  if (!(error instanceof Error)) return new Error(scrubText(String(error), secrets));
  scrubObject(error, secrets, new Set(), 0);
  return error;
}

/** Far deeper than any error Pulumi or Node makes. */
const MAX_SCRUB_DEPTH = 8;

function scrubObject(value: object, secrets: readonly string[], seen: Set<object>, depth: number): void {
  if (seen.has(value) || depth > MAX_SCRUB_DEPTH) return;
  seen.add(value);
  const record = value as Record<string, unknown>;
  // message, stack and cause are own but not always enumerable.
  const keys = new Set([...Object.keys(value), ...(value instanceof Error ? ["message", "stack", "cause"] : [])]);
  for (const key of keys) {
    let field: unknown;
    try {
      field = record[key];
    } catch {
      continue; // a getter that throws: nothing we can read, nothing it shows
    }
    if (typeof field === "string") {
      const scrubbed = scrubText(field, secrets);
      if (scrubbed !== field) {
        try {
          record[key] = scrubbed;
        } catch {
          // read-only: left as is (none of Pulumi's or Node's error fields are)
        }
      }
    } else if (Array.isArray(field) && !Object.isFrozen(field)) {
      // A list of lines (RunFailedError.diagnostics) or of errors (AggregateError.errors).
      for (let i = 0; i < field.length; i++) {
        const item: unknown = field[i];
        if (typeof item === "string") field[i] = scrubText(item, secrets);
        else if (item instanceof Error) scrubObject(item, secrets, seen, depth + 1);
      }
    } else if (field instanceof Error || (key === "commandResult" && field !== null && typeof field === "object")) {
      // Only errors and Pulumi's captured command result: never an object the caller may still use (a workspace, options).
      scrubObject(field, secrets, seen, depth + 1);
    }
  }
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
