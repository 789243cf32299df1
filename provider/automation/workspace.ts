// Where an Automation-API run of the groups lives: a work directory holding
// the stack's settings (Pulumi.<stack>.yaml keeps the secrets salt: keep it),
// the default file backend, and node_modules links to the exact @pulumi/pulumi
// and pulumi-user-groups this process uses. Pulumi starts the dynamic-provider
// plugin in the work directory, and both packages must resolve from there.
//
// Those two links decide which code runs with the API key in its environment,
// and for the CLI the work directory sits in a repository a pull request can
// change. So only the exact symlink made here is accepted: a symlink elsewhere
// is replaced, anything else (a planted directory or file) is refused. The
// directories are made with mode 0700: state and settings are the user's alone.
import { chmodSync, lstatSync, mkdirSync, realpathSync, rmSync, type Stats, symlinkSync } from "node:fs";
import path from "node:path";
import { UserGroupsError } from "../wire/errors";

export const PROJECT_NAME = "user-groups";

export class UntrustedWorkspaceError extends UserGroupsError {
  constructor(readonly linkPath: string, readonly expectedTarget: string) {
    super(
      "untrusted_workspace",
      `${linkPath} is not the link to ${expectedTarget} that pulumi-user-groups makes: refusing to run code from it ` +
        "with the API key in its environment. Remove it (it may have been planted, e.g. committed to the repository) and run again.",
    );
    this.name = "UntrustedWorkspaceError";
  }
}

function packageRoot(specifier: string): string {
  return path.dirname(require.resolve(`${specifier}/package.json`));
}

function ownPackageRoot(): string {
  // Resolves to this very package (self-reference through package.json "exports").
  return packageRoot("pulumi-user-groups");
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** A symlink whose real path is the target's. */
function isOurLink(linkPath: string, target: string): boolean {
  if (lstatOrUndefined(linkPath)?.isSymbolicLink() !== true) return false;
  try {
    return realpathSync(linkPath) === realpathSync(target);
  } catch {
    return false; // dangling
  }
}

function link(target: string, linkPath: string): void {
  if (isOurLink(linkPath, target)) return;
  const existing = lstatOrUndefined(linkPath);
  if (existing?.isSymbolicLink()) rmSync(linkPath); // removes the link itself, never what it points to
  else if (existing !== undefined) throw new UntrustedWorkspaceError(linkPath, target);
  mkdirSync(path.dirname(linkPath), { recursive: true, mode: 0o700 });
  try {
    symlinkSync(target, linkPath, "dir");
  } catch (error) {
    // A concurrent run may have made the same link; anything else there is not ours.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !isOurLink(linkPath, target)) {
      throw (error as NodeJS.ErrnoException).code === "EEXIST" ? new UntrustedWorkspaceError(linkPath, target) : error;
    }
  }
}

/**
 * Makes `dir` (mode 0700) if missing. With `tighten`, an existing one of ours
 * becomes 0700 too (the state directory: ours alone; the work directory may be
 * one the caller chose for more than this, so it is left as it is).
 */
function privateDir(dir: string, tighten: boolean): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!tighten) return;
  const stats = lstatSync(dir);
  const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
  if (stats.isDirectory() && mine && (stats.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

export interface PreparedWorkspace {
  readonly workDir: string;
  readonly backendUrl: string;
}

export function prepareWorkspace(workDir: string, backendUrl: string | undefined): PreparedWorkspace {
  const absolute = path.resolve(workDir);
  privateDir(absolute, false);
  link(packageRoot("@pulumi/pulumi"), path.join(absolute, "node_modules", "@pulumi", "pulumi"));
  link(ownPackageRoot(), path.join(absolute, "node_modules", "pulumi-user-groups"));
  let url = backendUrl;
  if (url === undefined) {
    const stateDir = path.join(absolute, "state");
    privateDir(stateDir, true);
    url = `file://${stateDir}`;
  }
  return { workDir: absolute, backendUrl: url };
}
