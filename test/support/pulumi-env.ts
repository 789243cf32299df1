// Throwaway Pulumi surroundings for a test: the testing entry's stack directory
// (testing/environment.ts: a file backend and a work directory of its own, 0700,
// offline settings, a passphrase), with the engine this run built and a
// PULUMI_HOME of its own. Work directories live under the repository
// (git-ignored .work/) because the engine starts the dynamic-provider plugin
// there, and that plugin resolves @pulumi/pulumi and pulumi-user-groups from its
// working directory.
import path from "node:path";
import { inject } from "vitest";
import { createStackDirectory } from "../../testing/environment";

export const REPO_ROOT = path.resolve(__dirname, "../..");

export interface PulumiTestEnv {
  readonly workDir: string;
  readonly backendDir: string;
  readonly envVars: Record<string, string>;
  readonly binDir: string;
  cleanup(): void;
}

/**
 * V8's code cache for the Node.js processes a test's engine runs start (the `user-groups` command, Pulumi's
 * language host and dynamic-provider plugin): each loads the same modules (@pulumi/pulumi, this package), compiled
 * once and then read from here instead of once per process. Node.js treats it as a quiet optimisation (nothing
 * printed, ignored where it cannot be used); it holds compiled code only, outside every test's own directory.
 */
const NODE_COMPILE_CACHE = path.join(REPO_ROOT, ".work", "node-compile-cache");

export function createPulumiTestEnv(label: string): PulumiTestEnv {
  const binDir = inject("pulumiBinDir");
  const { workDir, backendDir, envVars, cleanup } = createStackDirectory({
    workRoot: path.join(REPO_ROOT, ".work"),
    prefix: label,
    pulumiBinDir: binDir,
    isolatedPulumiHome: true,
    passphrase: "test-passphrase",
  });
  return { workDir, backendDir, binDir, envVars: { ...envVars, NODE_COMPILE_CACHE }, cleanup };
}
