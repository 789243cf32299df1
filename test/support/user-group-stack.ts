// Runs UserGroup programs through the Automation API against a fake server,
// the way a user's program runs them: the resource comes from the built
// package (dist/, loaded by its name), so what Pulumi serializes is what ships.
// The stack is the testing entry's (createTestStack: one harness for users' tests
// and ours); the program names its service itself (stack config or environment).
import type { InlineProgramArgs, Stack } from "@pulumi/pulumi/automation";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { inject } from "vitest";
import { createTestStack, type TestEmulator, type TestStack } from "../../testing";
import { REPO_ROOT } from "./pulumi-env";

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
export function readStoredState(env: { readonly backendDir: string }): string {
  const files = readdirSync(env.backendDir, { recursive: true, encoding: "utf8" }).filter(
    (file) => file.includes(`${path.sep}stacks${path.sep}`) && file.endsWith(".json") && !file.includes(".bak"),
  );
  if (files.length !== 1) throw new Error(`expected one stack state file in ${env.backendDir}, found ${files.join(", ")}`);
  return readFileSync(path.join(env.backendDir, files[0]!), "utf8");
}

export interface StackHandle {
  readonly stack: Stack;
  /** The testing entry's stack (its emulator namespace is unused: the program names its own service). */
  readonly testStack: TestStack;
  readonly env: { readonly workDir: string; readonly backendDir: string };
  /** Every line the engine printed, for secret scans. */
  readonly output: string[];
  readonly onOutput: (line: string) => void;
  cleanup(): Promise<void>;
}

/**
 * A stack of `program` (project `user-groups-<label>`, stack `test`) in a directory of its own under .work/,
 * with the engine this run built and a PULUMI_HOME of its own. `config` and `extraEnv` say where the service
 * is: nothing of the emulator is put in the environment (an emulator is started for the stack unless given).
 */
export async function createUserGroupStack(
  label: string,
  program: InlineProgramArgs["program"],
  config: Record<string, { value: string; secret?: boolean }> = {},
  extraEnv: Record<string, string> = {},
  emulator?: TestEmulator,
): Promise<StackHandle> {
  const testStack = await createTestStack({
    program,
    projectName: `user-groups-${label}`,
    ...(emulator === undefined ? {} : { emulator }),
    credentials: "none",
    config,
    envVars: extraEnv,
    workRoot: path.join(REPO_ROOT, ".work"),
    pulumiBinDir: inject("pulumiBinDir"),
    isolatedPulumiHome: true,
    passphrase: "test-passphrase",
  });
  const output: string[] = [];
  return {
    stack: testStack.stack,
    testStack,
    env: { workDir: testStack.workDir, backendDir: testStack.backendDir },
    output,
    onOutput: (line: string) => output.push(line),
    cleanup: () => testStack.dispose(),
  };
}
