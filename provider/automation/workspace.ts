// Where an Automation-API run of the groups lives: a work directory holding
// the stack's settings (Pulumi.<stack>.yaml keeps the secrets salt: keep it),
// the default file backend, and node_modules links to the exact @pulumi/pulumi
// and pulumi-user-groups this process uses. Pulumi starts the dynamic-provider
// plugin in the work directory, and both packages must resolve from there.
import { mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";

export const PROJECT_NAME = "user-groups";

function packageRoot(specifier: string): string {
  return path.dirname(require.resolve(`${specifier}/package.json`));
}

function ownPackageRoot(): string {
  // Resolves to this very package (self-reference through package.json "exports").
  return packageRoot("pulumi-user-groups");
}

function link(target: string, linkPath: string): void {
  try {
    if (readlinkSync(linkPath) === target) return;
    rmSync(linkPath, { force: true, recursive: true });
  } catch {
    // not there yet
  }
  mkdirSync(path.dirname(linkPath), { recursive: true });
  try {
    symlinkSync(target, linkPath, "dir");
  } catch (error) {
    // A concurrent run may have made the same link.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

export interface PreparedWorkspace {
  readonly workDir: string;
  readonly backendUrl: string;
}

export function prepareWorkspace(workDir: string, backendUrl: string | undefined): PreparedWorkspace {
  const absolute = path.resolve(workDir);
  mkdirSync(absolute, { recursive: true });
  link(packageRoot("@pulumi/pulumi"), path.join(absolute, "node_modules", "@pulumi", "pulumi"));
  link(ownPackageRoot(), path.join(absolute, "node_modules", "pulumi-user-groups"));
  let url = backendUrl;
  if (url === undefined) {
    const stateDir = path.join(absolute, "state");
    mkdirSync(stateDir, { recursive: true });
    url = `file://${stateDir}`;
  }
  return { workDir: absolute, backendUrl: url };
}
