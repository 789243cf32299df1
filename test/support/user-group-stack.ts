// Runs UserGroup programs through the Automation API against a fake server,
// the way a user's program runs them: the resource comes from the built
// package (dist/, loaded by its name), so what Pulumi serializes is what ships.
import { type InlineProgramArgs, LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "./pulumi-env";

export type PackageModule = typeof import("../../provider");

/** The package as a Pulumi program would load it (self-reference through package.json "exports"). */
export function loadPackage(): PackageModule {
  return createRequire(path.join(REPO_ROOT, "package.json"))("pulumi-user-groups") as PackageModule;
}

/**
 * The stack's state exactly as the backend stores it. (Stack.exportStack runs
 * `pulumi stack export --show-secrets`, which decrypts secrets: useless for
 * checking that none are stored in plain text.)
 */
export function readStoredState(env: PulumiTestEnv): string {
  const files = readdirSync(env.backendDir, { recursive: true, encoding: "utf8" }).filter(
    (file) => file.includes(`${path.sep}stacks${path.sep}`) && file.endsWith(".json") && !file.includes(".bak"),
  );
  if (files.length !== 1) throw new Error(`expected one stack state file in ${env.backendDir}, found ${files.join(", ")}`);
  return readFileSync(path.join(env.backendDir, files[0]!), "utf8");
}

export interface StackHandle {
  readonly stack: Stack;
  readonly env: PulumiTestEnv;
  /** Every line the engine printed, for secret scans. */
  readonly output: string[];
  readonly onOutput: (line: string) => void;
  cleanup(): Promise<void>;
}

export async function createUserGroupStack(
  label: string,
  program: InlineProgramArgs["program"],
  config: Record<string, { value: string; secret?: boolean }> = {},
  extraEnv: Record<string, string> = {},
): Promise<StackHandle> {
  const env = createPulumiTestEnv(label);
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "test", projectName: `user-groups-${label}`, program },
    { workDir: env.workDir, envVars: { ...env.envVars, ...extraEnv } },
  );
  if (Object.keys(config).length > 0) await stack.setAllConfig(config);
  const output: string[] = [];
  return {
    stack,
    env,
    output,
    onOutput: (line: string) => output.push(line),
    cleanup: async () => {
      env.cleanup();
    },
  };
}
