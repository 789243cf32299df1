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

export function createPulumiTestEnv(label: string): PulumiTestEnv {
  const binDir = inject("pulumiBinDir");
  const { workDir, backendDir, envVars, cleanup } = createStackDirectory({
    workRoot: path.join(REPO_ROOT, ".work"),
    prefix: label,
    pulumiBinDir: binDir,
    isolatedPulumiHome: true,
    passphrase: "test-passphrase",
  });
  return { workDir, backendDir, binDir, envVars, cleanup };
}
