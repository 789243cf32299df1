// Throwaway Pulumi surroundings for a test: a file backend and a work directory
// of its own, offline settings, and a passphrase for the secrets provider.
// Work directories live under the repository (git-ignored .work/) because the
// engine starts the dynamic-provider plugin there, and that plugin resolves
// @pulumi/pulumi and pulumi-user-groups from its working directory.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { inject } from "vitest";

export const REPO_ROOT = path.resolve(__dirname, "../..");

export interface PulumiTestEnv {
  readonly workDir: string;
  readonly backendDir: string;
  readonly envVars: Record<string, string>;
  readonly binDir: string;
  cleanup(): void;
}

export function createPulumiTestEnv(label: string): PulumiTestEnv {
  const base = path.join(REPO_ROOT, ".work");
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(path.join(base, `${label}-`));
  const workDir = path.join(dir, "program");
  const backendDir = path.join(dir, "state");
  mkdirSync(workDir);
  mkdirSync(backendDir);
  const binDir = inject("pulumiBinDir");
  return {
    workDir,
    backendDir,
    binDir,
    envVars: {
      PULUMI_BACKEND_URL: `file://${backendDir}`,
      PULUMI_CONFIG_PASSPHRASE: "test-passphrase",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_HOME: path.join(dir, "pulumi-home"),
      PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ""}`,
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
