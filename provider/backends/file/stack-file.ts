// A stack's checkpoint where a file backend keeps it, read in this process
// instead of by a `pulumi stack select` or `pulumi stack export` (each one a
// CLI process: about 0.3 s of CPU, around every run and every state read).
// Only Pulumi's project layout (`.pulumi/meta.yaml` version 1: what every file
// backend made since Pulumi 3.61 has), a plain `<stack>.json` (no gzipped
// twin) of checkpoint version 3 naming this very stack; anything else is
// "unknown", and the caller asks the CLI as before. What the export prints is
// `{ version: 3, deployment: <the checkpoint's latest> }`, the very object
// (test/automation/engine/stack-file.test.ts compares the two on real stacks).
// A sidecar `<stack>.json.attrs` that is not whole (its writer rewrites it in
// place, torn-sidecars.ts) is a torn read here as it is for the CLI, which
// fails on it "to load checkpoint".
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { stackPath } from "../run-record";
import { isValidStackName } from "../stack-name";
import { UserGroupsError } from "../../wire/errors";
import { fileBackendDir } from "./backend-dir";
import { writePrivate } from "./private-files";

/** A deployment as `pulumi stack export` prints it. */
export interface StoredDeployment {
  readonly version: 3;
  readonly deployment: Record<string, unknown>;
}

/** Whether the backend holds the stack: "unknown" where only the CLI can say (another layout, a gzipped or torn file). */
export type StackFilePresence = "present" | "absent" | "unknown";

/** A checkpoint far above any stack of user groups: left to the CLI. */
const MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024;

/** Thrown for a sidecar being rewritten: worded as the CLI's own failure, so that the reader's torn-read retries apply. */
export class TornCheckpointError extends UserGroupsError {
  constructor(file: string) {
    super("stack_locked", `failed to load checkpoint: unexpected EOF (the sidecar ${path.basename(file)} is being rewritten)`);
    this.name = "TornCheckpointError";
  }
}

interface StackFiles {
  readonly data: string;
  readonly attrs: string;
  /** Pulumi's full name of the stack as its checkpoint names it. */
  readonly fullName: string;
}

function readText(file: string, maxBytes: number): string | undefined {
  try {
    return statSync(file).size > maxBytes ? undefined : readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The stack's files in the project layout, or undefined (not a file backend, another layout, a gzipped checkpoint,
 * an org other than the diy backend's); "none" when the backend holds nothing at all yet (no `.pulumi`).
 */
function stackFiles(backendUrl: string, project: string, stack: string): StackFiles | "none" | undefined {
  const dir = fileBackendDir(backendUrl);
  if (dir === undefined || !isValidStackName(stack)) return undefined;
  const named = stackPath(stack, project);
  if (named.org !== undefined && named.org !== "organization") return undefined;
  // A missing backend directory is the CLI's to report (backend_not_found); an empty one holds no stack.
  if (!existsSync(dir)) return undefined;
  if (!existsSync(path.join(dir, ".pulumi"))) return "none";
  const meta = readText(path.join(dir, ".pulumi", "meta.yaml"), 4096);
  if (meta === undefined || !/^version:\s*1\s*$/m.test(meta)) return undefined;
  const data = path.join(dir, ".pulumi", "stacks", named.project, `${named.stack}.json`);
  if (existsSync(`${data}.gz`)) return undefined;
  return { data, attrs: `${data}.attrs`, fullName: `organization/${named.project}/${named.stack}` };
}

function sidecarTorn(attrs: string): boolean {
  const text = readText(attrs, 64 * 1024);
  if (text === undefined) return existsSync(attrs);
  try {
    JSON.parse(text);
    return false;
  } catch {
    return true;
  }
}

/** Whether the backend of `backendUrl` holds the stack, from its files: "present" only with a whole sidecar. */
export function stackFilePresence(backendUrl: string, project: string, stack: string): StackFilePresence {
  const files = stackFiles(backendUrl, project, stack);
  if (files === "none") return "absent";
  if (files === undefined) return "unknown";
  if (!existsSync(files.data)) return existsSync(files.attrs) ? "unknown" : "absent";
  return sidecarTorn(files.attrs) ? "unknown" : "present";
}

/**
 * The stack's deployment as `pulumi stack export` prints it, read from its
 * file; undefined where the CLI must say (see the file header, and a missing
 * stack: the CLI's "no stack named"). A torn sidecar throws TornCheckpointError.
 */
export function readStoredDeployment(backendUrl: string, project: string, stack: string): StoredDeployment | undefined {
  const files = stackFiles(backendUrl, project, stack);
  if (files === undefined || files === "none") return undefined;
  const text = readText(files.data, MAX_CHECKPOINT_BYTES);
  if (text === undefined) return undefined;
  if (sidecarTorn(files.attrs)) throw new TornCheckpointError(files.attrs);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object") return undefined;
  const { version, checkpoint } = parsed as { version?: unknown; checkpoint?: { stack?: unknown; latest?: unknown } };
  if (version !== 3 || checkpoint === null || typeof checkpoint !== "object" || checkpoint.stack !== files.fullName) return undefined;
  const latest = checkpoint.latest;
  if (latest === null || typeof latest !== "object" || Array.isArray(latest)) return undefined;
  return { version: 3, deployment: latest as Record<string, unknown> };
}

/**
 * Writes `deployment` (as `pulumi stack export` prints it) as the stack's
 * latest checkpoint in its file, as `pulumi stack import` would, without a CLI
 * process: only where readStoredDeployment reads the stack (its checkpoint, and a
 * sidecar whole if there is one), the sidecar's MD5 updated with it. Answers false where
 * the CLI must write. For a backend no other process writes while the caller
 * runs (a run's private copy of an object-store stack, under its lease).
 */
export function writeStoredDeployment(backendUrl: string, project: string, stack: string, deployment: StoredDeployment): boolean {
  const files = stackFiles(backendUrl, project, stack);
  if (files === undefined || files === "none" || readStoredDeployment(backendUrl, project, stack) === undefined) return false;
  const checkpoint = JSON.parse(readFileSync(files.data, "utf8")) as { version: 3; checkpoint: Record<string, unknown> };
  // No sidecar (a private copy's checkpoint as the store gave it): none is made; one there gets the new bytes' MD5.
  const attrs = existsSync(files.attrs) ? (JSON.parse(readFileSync(files.attrs, "utf8")) as Record<string, unknown>) : undefined;
  const text = JSON.stringify({ ...checkpoint, checkpoint: { ...checkpoint.checkpoint, latest: deployment.deployment } }, null, 4);
  writePrivate(files.data, text, false);
  if (attrs !== undefined) writePrivate(files.attrs, JSON.stringify({ ...attrs, md5: createHash("md5").update(text, "utf8").digest("base64") }), false);
  return true;
}
