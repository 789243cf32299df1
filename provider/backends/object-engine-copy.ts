// The fence of the engine's own checkpoint writes on an object store (issue 42
// item 2). Pulumi's DIY backend writes a stack's checkpoint with plain writes,
// which no store refuses; so a run's engine never writes to the store at all.
// It works on a private local copy: a file:// backend in a private temporary
// directory (0700; our files 0600) holding the stack's checkpoint as the store
// had it when the run took its lease. What the engine writes there reaches the
// store only through `commitCopy`: a conditional write (S3 and Azure `If-Match`
// on the ETag, GCS `ifGenerationMatch`) on the version this holder last read or
// wrote. A new holder's first act after taking the lease is such a write (the
// checkpoint rewritten, marked with its epoch), which moves the version on: a
// stale holder's later commit names a version the store no longer has and is
// refused (`run_fenced`). Every commit carries `userGroupsCommit: {epoch, seq}`
// (a field Pulumi ignores): no two commits have the same bytes, so S3's ETag,
// a hash of the bytes, never comes back to a version a stale holder knows.
//
// When: the run's provider processes commit before each request they send to
// the service (their fence check), so a pending create or delete the engine
// recorded is in the store before the service is asked (a crash mid-run loses
// nothing: the next holder adopts it, as on any backend); the run commits once
// more when it lets go of the lease, with Pulumi's history files of the run
// (unconditional: unique names). Backups (`.pulumi/backups/`, `<stack>.json.bak`)
// stay in the private copy and go with it. Commits are one at a time: an
// exclusive lock file in the copy's directory, which also holds the version
// last committed (`commit.json`).
import { createHash, randomUUID } from "node:crypto";
import { closeSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { systemClock } from "../clock";
import { RunFencedError } from "./backend";
import { type ObjectClient, ObjectStoreError } from "./object-client";
import { stackPath } from "./run-record";

/** The variable a run's provider processes find the private copy by (its directory). */
export const OBJECT_COPY_ENV = "USER_GROUPS_OBJECT_COPY";

const stateSchema = z.object({
  // `.pulumi/stacks/[<project>/]<stack>.json`: no `.`/`..` segment, nothing outside the copy.
  key: z
    .string()
    .regex(/^\.pulumi\/stacks\/(?:[^/\u0000]{1,255}\/)?[^/\u0000]{1,255}\.json$/)
    .refine((key) => !key.split("/").some((part) => part === "." || part === "..")),
  /** The store's version of the checkpoint this holder last read or wrote (undefined: none there yet). */
  version: z.string().max(512).optional(),
  epoch: z.number().int().nonnegative(),
  seq: z.number().int().nonnegative(),
  /** The hash of the local checkpoint last committed: an unchanged copy sends nothing. */
  sent: z.string().max(128),
  /** History files already in the store. */
  history: z.array(z.string().max(300)).max(10_000),
});
type CopyState = z.infer<typeof stateSchema>;

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** Writes a file of ours in the copy (0600) through a temporary name. */
function writePrivateFile(file: string, bytes: Buffer | string): void {
  const temporary = `${file}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

const MARK_AT_END = /,\s*"userGroupsCommit":\{"epoch":\d{1,15},"seq":\d{1,15}\}\s*\}\s*$/;

/**
 * The checkpoint's bytes with our commit mark as its last field, in place of an
 * older one: text appended, not the JSON re-serialised (a number past 2^53
 * would lose digits in JavaScript).
 */
export function markedCheckpoint(bytes: string, epoch: number, seq: number): string {
  const bare = bytes.replace(MARK_AT_END, "}").trimEnd();
  if (!bare.startsWith("{") || !bare.endsWith("}")) throw new ObjectStoreError("backend_unreachable", "The stack's checkpoint is not a JSON object: not committed.");
  const empty = /^\{\s*\}$/.test(bare);
  return `${bare.slice(0, -1).trimEnd()}${empty ? "" : ","}"userGroupsCommit":{"epoch":${epoch},"seq":${seq}}}\n`;
}

/** A private copy's directory from the environment, checked: absolute, ours, 0700, with our state file in it. */
function copyDirOf(value: string): string {
  const dir = path.resolve(value);
  if (dir !== value || !path.isAbsolute(value)) throw new ObjectStoreError("backend_url_invalid", `${OBJECT_COPY_ENV} must be an absolute path`);
  const stats = lstatSync(dir);
  const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
  if (!stats.isDirectory() || !mine || (stats.mode & 0o077) !== 0) throw new ObjectStoreError("backend_url_invalid", `${OBJECT_COPY_ENV} must name a private directory of this user (0700)`);
  return dir;
}

/** One commit at a time per copy, in this process... */
const chains = new Map<string, Promise<unknown>>();

/** ...and across the run's processes: an exclusive lock file, broken when older than a holder ever keeps it. */
async function underCopyLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const previous = chains.get(dir) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(async () => {
    const lock = path.join(dir, "commit.lock");
    for (let attempt = 0; ; attempt++) {
      try {
        closeSync(openSync(lock, "wx", 0o600));
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        try {
          if (systemClock.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { force: true });
        } catch {
          // released meanwhile
        }
        if (attempt > 1_200) throw new RunFencedError("the run's private copy stayed locked by another of its processes");
        await systemClock.sleep(25 + systemClock.random() * 25);
      }
    }
    try {
      return await work();
    } finally {
      rmSync(lock, { force: true });
    }
  });
  chains.set(dir, mine);
  return mine;
}

const readState = (dir: string): CopyState => stateSchema.parse(JSON.parse(readFileSync(path.join(dir, "commit.json"), "utf8")));
const writeState = (dir: string, state: CopyState) => writePrivateFile(path.join(dir, "commit.json"), JSON.stringify(state));
const backendRoot = (dir: string) => path.join(dir, "backend");

/**
 * Commits the private copy's checkpoint to the store when it changed since the
 * last commit: a conditional write on the version last read or written.
 * Throws RunFencedError when the store refuses it (another holder moved it on).
 * `history`: also puts the history files the engine wrote since (at the end of a run).
 */
export async function commitCopy(client: ObjectClient, copyDir: string, options: { readonly history?: boolean } = {}): Promise<void> {
  const dir = copyDirOf(copyDir);
  await underCopyLock(dir, async () => {
    const state = readState(dir);
    const local = path.join(backendRoot(dir), state.key);
    let bytes: string;
    try {
      bytes = readFileSync(local, "utf8");
    } catch {
      return; // no checkpoint (a stack not made yet): nothing to commit
    }
    const hash = sha256(bytes);
    if (hash !== state.sent) {
      const seq = state.seq + 1;
      const body = markedCheckpoint(bytes, state.epoch, seq);
      const version = state.version === undefined ? await client.create(state.key, body) : await client.replace(state.key, body, state.version);
      if (version === undefined) throw new RunFencedError(`the stack's checkpoint in ${client.place} is no longer the version this run last wrote (another run holds the stack); this run's changes since are not kept`);
      writeState(dir, { ...state, version, seq, sent: hash });
    }
    if (options.history) await putHistory(client, dir, readState(dir));
  });
}

/** Pulumi's history files of the stack in the copy that the store does not have yet (unique names: plain writes). */
async function putHistory(client: ObjectClient, dir: string, state: CopyState): Promise<void> {
  const folder = state.key.replace(/^\.pulumi\/stacks\//, ".pulumi/history/").replace(/\.json$/, "");
  let names: string[];
  try {
    names = readdirSync(path.join(backendRoot(dir), folder)).filter((name) => /^[A-Za-z0-9._-]{1,250}\.json(\.gz)?$/.test(name) && !state.history.includes(name));
  } catch {
    return;
  }
  const sent: string[] = [];
  for (const name of names) {
    await client.put(`${folder}/${name}`, readFileSync(path.join(backendRoot(dir), folder, name), "utf8"));
    sent.push(name);
  }
  if (sent.length > 0) writeState(dir, { ...state, history: [...state.history, ...sent].slice(-10_000) });
}

/** A run's private copy of its stack: where the engine's backend is, and how to commit and remove it. */
export interface EngineCopy {
  /** The copy's directory (0700): the providers' OBJECT_COPY_ENV. */
  readonly dir: string;
  /** The engine's backend: `file://<dir>/backend`. */
  readonly url: string;
  /** The last commit, with the run's history files: RunFencedError when refused. */
  commit(): Promise<void>;
  /** Removes the copy (what was not committed is gone). */
  dispose(): void;
}

/**
 * Makes a run's private copy of a stack: the checkpoint (and the backend's
 * `meta.yaml`) downloaded into a new private directory, then the first act of
 * the new holder, the checkpoint rewritten in the store on the version read
 * (marked with `epoch`), which moves the version on. A race with another writer
 * of the checkpoint (a person's `pulumi` on the store) is read again, a few times.
 */
export async function openEngineCopy(client: ObjectClient, project: string, stack: string, epoch: number): Promise<EngineCopy> {
  const where = stackPath(stack, project);
  const metaBody = (await client.get(".pulumi/meta.yaml"))?.body;
  // A backend with stacks by project (meta.yaml version 1, what Pulumi makes today) or the legacy layout.
  const byProject = metaBody === undefined || /^\s*version:\s*[1-9]/m.test(metaBody);
  const key = byProject ? `.pulumi/stacks/${where.project}/${where.stack}.json` : `.pulumi/stacks/${where.stack}.json`;
  const dir = mkdtempSync(path.join(tmpdir(), COPY_PREFIX));
  try {
    const root = backendRoot(dir);
    mkdirSync(path.join(root, path.dirname(key)), { recursive: true, mode: 0o700 });
    writePrivateFile(path.join(root, ".pulumi", "meta.yaml"), metaBody ?? "version: 1\n");
    let state: CopyState | undefined;
    for (let attempt = 0; attempt < 5 && state === undefined; attempt++) {
      const current = await client.get(key);
      if (current === undefined) {
        if (await client.get(`${key}.gz`)) throw new ObjectStoreError("backend_unreachable", `The stack's checkpoint in ${client.place} is gzipped (PULUMI_DIY_BACKEND_GZIP): runs of ours on an object store keep it as plain JSON; unset it and run \`pulumi stack export | pulumi stack import\` once.`);
        rmSync(path.join(root, key), { force: true });
        state = { key, epoch, seq: 0, sent: sha256(""), history: [] };
        break;
      }
      const moved = await client.replace(key, markedCheckpoint(current.body, epoch, 0), current.version);
      if (moved === undefined) continue;
      writePrivateFile(path.join(root, key), current.body);
      state = { key, version: moved, epoch, seq: 0, sent: sha256(current.body), history: [] };
    }
    if (state === undefined) throw new ObjectStoreError("backend_unreachable", `The stack's checkpoint in ${client.place} kept changing while this run took it over; ask again.`);
    writeState(dir, state);
    return {
      dir,
      url: `file://${root}`,
      commit: () => commitCopy(client, dir, { history: true }),
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

const COPY_PREFIX = "user-groups-copy-";

/**
 * Whether a backend URL is a run's private copy (`file://<tmp>/user-groups-copy-…/backend`):
 * an engine read through it that finds it gone met a run that let go of the stack meanwhile.
 */
export function isEngineCopyUrl(url: string): boolean {
  return /^file:\/\/\/.*\/user-groups-copy-[A-Za-z0-9]{6}\/backend\/?$/.test(url);
}

/** Whether a private copy's directory still exists (a provider process of a run that ended finds none). */
export const copyExists = (dir: string) => existsSync(path.join(dir, "commit.json"));
