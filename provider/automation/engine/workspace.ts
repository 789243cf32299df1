// Where an Automation-API run of the groups lives. Two directories:
//
// - The work directory (the CLI's `.user-groups/` beside the groups file) keeps
//   what must outlive a run: the stack's settings `Pulumi.<stack>.yaml` (its
//   secrets salt) and, without a configured backend, the file backend `state/`.
//   For the CLI it sits in a repository a pull request can change, so nothing in
//   it decides what runs: no Pulumi command ever runs there, the settings file is
//   read only as a regular file (never through a symlink) and written back by
//   rename, and files Pulumi would read there instead of ours (`Pulumi.json`,
//   `Pulumi.yml`, `Pulumi.<stack>.json`/`.yml`, symlinks) are refused.
// - A run directory, made by this process for each stack it opens (mkdtemp,
//   0700, removed after): the project file Pulumi reads (`Pulumi.yaml`, written
//   by the Automation API, with no backend URL in it: that travels in the
//   environment only), a copy of the stack's settings, and the node_modules links
//   to the exact @pulumi/pulumi and pulumi-user-groups of this process. Pulumi
//   runs there and starts the dynamic-provider plugin there, with the API key in
//   its environment: nothing in it came from anyone else. Pulumi keeps a
//   `workspaces/<project>-<sha1 of the project file's path>-workspace.json` in
//   PULUMI_HOME per project directory (it names the backend URL); the run's own
//   is removed with the run directory, so that runs leave none behind.
import { createHash } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import yaml from "js-yaml";
import { UserGroupsError } from "../../wire/errors";
import { pathTaken, readRegularFile, readRegularFileIfPresent, writeFileReplacing, FileRefusedError } from "../backend";

export const PROJECT_NAME = "user-groups";

/** A stack's settings: a salt and a few config values, far below this. */
const MAX_SETTINGS_BYTES = 1024 * 1024;

/** Something in the work directory this library did not put there, or would have to follow a symlink to use. */
export class UntrustedWorkspaceError extends UserGroupsError {
  constructor(
    readonly file: string,
    why: string,
  ) {
    super(
      "untrusted_workspace",
      `${file} ${why}: refusing to run with it (it may have been planted, e.g. committed to the repository). ` +
        "Nothing was changed. Remove it and run again.",
    );
    this.name = "UntrustedWorkspaceError";
  }
}

function packageRoot(specifier: string): string {
  return path.dirname(require.resolve(`${specifier}/package.json`));
}

function lstatOrUndefined(file: string) {
  try {
    return lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The settings file's name part of a stack name (`org/project/prod` and `prod` share `Pulumi.prod.yaml`, as in Pulumi). */
export function stackSettingsName(stack: string): string {
  return stack.slice(stack.lastIndexOf("/") + 1);
}

/** The stack's settings file in a directory. */
export function stackSettingsFile(dir: string, stack: string): string {
  return path.join(dir, `Pulumi.${stackSettingsName(stack)}.yaml`);
}

/** Makes `dir` (mode 0700) if missing; refuses a symlink there (writes would land wherever it points). */
function ownDir(dir: string, tighten: boolean): void {
  const existing = lstatOrUndefined(dir);
  if (existing?.isSymbolicLink()) throw new UntrustedWorkspaceError(dir, "is a symbolic link");
  if (existing !== undefined && !existing.isDirectory()) throw new UntrustedWorkspaceError(dir, "is not a directory");
  if (existing === undefined) mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!tighten) return;
  const stats = lstatSync(dir);
  const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
  if (mine && (stats.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/**
 * The project file earlier versions wrote into the work directory: exactly the
 * Automation API's dump of { name: "user-groups", runtime: "nodejs", backend: { url } }.
 * No longer read by anyone; removed, since its backend URL may hold a password.
 */
function isLegacyProjectFile(text: string): boolean {
  let parsed: unknown;
  try {
    parsed = yaml.load(text, { schema: yaml.JSON_SCHEMA });
  } catch {
    return false;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return false;
  const { name, runtime, backend, ...rest } = parsed as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || name !== PROJECT_NAME || runtime !== "nodejs") return false;
  if (backend === undefined) return true;
  if (backend === null || typeof backend !== "object") return false;
  const { url, ...otherBackend } = backend as Record<string, unknown>;
  return Object.keys(otherBackend).length === 0 && (url === undefined || typeof url === "string");
}

/**
 * Refuses what Pulumi, or an earlier version of this library, would have read
 * from the work directory instead of what we write, and any symlink where we
 * read or write; removes the legacy project file.
 */
function checkWorkDir(workDir: string, stack: string): void {
  for (const name of ["Pulumi.json", "Pulumi.yml"]) {
    const file = path.join(workDir, name);
    if (pathTaken(file)) throw new UntrustedWorkspaceError(file, "is not a file pulumi-user-groups writes (its project file lives in a private directory of each run)");
  }
  const settingsName = stackSettingsName(stack);
  for (const ext of [".json", ".yml"]) {
    const file = path.join(workDir, `Pulumi.${settingsName}${ext}`);
    if (pathTaken(file)) throw new UntrustedWorkspaceError(file, `is not a file pulumi-user-groups writes (the settings of stack "${stack}" are Pulumi.${settingsName}.yaml)`);
  }
  const settings = stackSettingsFile(workDir, stack);
  const settingsStats = lstatOrUndefined(settings);
  if (settingsStats !== undefined && !settingsStats.isFile()) {
    throw new UntrustedWorkspaceError(settings, settingsStats.isSymbolicLink() ? "is a symbolic link" : "is not a regular file");
  }
  const project = path.join(workDir, "Pulumi.yaml");
  if (pathTaken(project)) {
    let text: string;
    try {
      text = readRegularFile(project, 64 * 1024, "project file").toString("utf8");
    } catch (error) {
      if (error instanceof FileRefusedError) throw new UntrustedWorkspaceError(project, error.problem === "symlink" ? "is a symbolic link" : "is not the project file an earlier version wrote");
      throw error;
    }
    if (!isLegacyProjectFile(text)) throw new UntrustedWorkspaceError(project, "is not the project file an earlier version of pulumi-user-groups wrote (its project file now lives in a private directory of each run)");
    rmSync(project, { force: true });
  }
}

export interface PreparedWorkspace {
  /** The work directory: the stack's settings and, by default, its file backend. */
  readonly workDir: string;
  /** The backend URL as given (it may hold a password: pass it in the environment only, show withoutCredentials). */
  readonly backendUrl: string;
}

/** The work directory of a stack, checked (and made, 0700, if missing), and its backend. */
export function prepareWorkspace(workDir: string, backendUrl: string | undefined, stack: string): PreparedWorkspace {
  const absolute = path.resolve(workDir);
  ownDir(absolute, false);
  checkWorkDir(absolute, stack);
  let url = backendUrl;
  if (url === undefined) {
    const stateDir = path.join(absolute, "state");
    ownDir(stateDir, true);
    url = `file://${stateDir}`;
  }
  return { workDir: absolute, backendUrl: url };
}

/** Run directories not yet removed: removed when the process exits. */
const liveRunDirs = new Set<string>();
let exitHookInstalled = false;

function removeLiveRunDirs(): void {
  for (const dir of liveRunDirs) rmSync(dir, { recursive: true, force: true });
  liveRunDirs.clear();
}

/** The workspace files Pulumi keeps in PULUMI_HOME for a project in `dir` (its path as given and resolved). */
function pulumiWorkspaceFiles(dir: string, pulumiHome = path.join(homedir(), ".pulumi")): string[] {
  let real = dir;
  try {
    real = realpathSync(dir);
  } catch {
    // already gone: its path as given is all there is
  }
  return [...new Set([dir, real])].map((projectDir) => {
    const hash = createHash("sha1").update(path.join(projectDir, "Pulumi.yaml")).digest("hex");
    return path.join(pulumiHome, "workspaces", `${PROJECT_NAME}-${hash}-workspace.json`);
  });
}

export interface RunDirectory {
  /** Where Pulumi runs: the LocalWorkspace's workDir. */
  readonly dir: string;
  /** Writes the stack's settings back to the work directory when Pulumi changed them (a new stack's salt, config). */
  saveSettings(): void;
  /** saveSettings, then removes the run directory. */
  dispose(): void;
}

/**
 * A private directory for the runs of one stack: the node_modules links, and a
 * copy of the stack's settings from the work directory (read as a regular file only).
 */
export function makeRunDirectory(workspace: PreparedWorkspace, stack: string, pulumiHome?: string): RunDirectory {
  const persistent = stackSettingsFile(workspace.workDir, stack);
  let saved = readRegularFileIfPresent(persistent, MAX_SETTINGS_BYTES, "stack settings file");
  const dir = mkdtempSync(path.join(tmpdir(), "user-groups-run-")); // 0700, a fresh name: nobody else's
  liveRunDirs.add(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", removeLiveRunDirs);
  }
  try {
    const modules = path.join(dir, "node_modules");
    mkdirSync(path.join(modules, "@pulumi"), { recursive: true, mode: 0o700 });
    symlinkSync(packageRoot("@pulumi/pulumi"), path.join(modules, "@pulumi", "pulumi"), "dir");
    // Resolves to this very package (self-reference through package.json "exports").
    symlinkSync(packageRoot("pulumi-user-groups"), path.join(modules, "pulumi-user-groups"), "dir");
    if (saved !== undefined) writeFileReplacing(stackSettingsFile(dir, stack), saved);
  } catch (error) {
    liveRunDirs.delete(dir);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const saveSettings = () => {
    const current = readRegularFileIfPresent(stackSettingsFile(dir, stack), MAX_SETTINGS_BYTES, "stack settings file");
    if (current === undefined || (saved !== undefined && current.equals(saved))) return;
    // Refused at the start if it was a symlink; checked again, since the work directory is not ours alone.
    if (lstatOrUndefined(persistent)?.isSymbolicLink()) throw new UntrustedWorkspaceError(persistent, "is a symbolic link");
    writeFileReplacing(persistent, current);
    saved = current;
  };
  return {
    dir,
    saveSettings,
    dispose: () => {
      if (!liveRunDirs.has(dir)) return;
      try {
        saveSettings();
      } finally {
        liveRunDirs.delete(dir);
        for (const file of pulumiWorkspaceFiles(dir, pulumiHome)) rmSync(file, { force: true });
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
