// The data file: loaded once at start, rewritten atomically after mutations.
//
// Durability choice ("group commit"): a mutating request is answered only once a
// write that contains it is on disk (temp file in the same directory, fsync,
// rename, fsync of the directory). Mutations that arrive while a write is running
// share the next write, so a burst of 1000 mutations costs a handful of writes,
// not 1000. Consequences: an acknowledged change survives kill -9, and the file is
// always either the old or the new complete snapshot, never a torn one.
import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { formatIssues, WORDED_ISSUES } from "../provider/wire/issues.js";
import { snapshotSchema, type Snapshot } from "./store.js";
import { UserGroupsError } from "../provider/wire/errors.js";

/** Reads the data file; `undefined` when it does not exist yet. Corruption is an error, never silently empty. */
export async function loadSnapshot(file: string): Promise<Snapshot | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UserGroupsError("invalid_data_file", `data file ${file} is not valid JSON (${(error as Error).message}); move it away to start empty`, {
      cause: error,
    });
  }
  const parsed = snapshotSchema.safeParse(json, WORDED_ISSUES);
  if (!parsed.success) {
    throw new UserGroupsError("invalid_data_file", `data file ${file} does not hold fake-server state: ${formatIssues(parsed.error, "the file")[0]}`);
  }
  return parsed.data;
}

/**
 * Writes `content` to `file` so that readers only ever see the old or the new whole file.
 * The temporary file has a random name and is created exclusively ("wx": never an
 * existing file, never through a symlink someone planted), readable by the owner only.
 */
export async function writeFileAtomic(file: string, content: string): Promise<void> {
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${randomBytes(8).toString("hex")}.tmp`);
  const handle = await open(temp, "wx", 0o600);
  try {
    try {
      await handle.writeFile(content, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  // Make the rename itself durable. Some platforms cannot fsync a directory; the
  // rename is still atomic there, only its durability is up to the OS.
  try {
    const dirHandle = await open(dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  } catch {
    /* best effort */
  }
}

type Waiter = { resolve: () => void; reject: (error: unknown) => void };

/** Coalesces mutations into few atomic writes; `commit()` resolves once the current state is on disk. */
export class Persister {
  private dirty = false;
  private writing: Promise<void> | undefined;
  /** Waiting for the write in progress (it holds their changes). */
  private current: Waiter[] = [];
  /** Waiting for the next write (their changes came after the current one started). */
  private next: Waiter[] = [];

  constructor(
    private readonly file: string,
    private readonly snapshot: () => Snapshot,
  ) {}

  /** Records that the state changed and starts a write soon. */
  markDirty(): void {
    this.dirty = true;
    this.kick();
  }

  /** Resolves when every change made before this call is on disk; rejects if that write fails. */
  commit(): Promise<void> {
    if (!this.dirty && this.writing === undefined) return Promise.resolve();
    return new Promise((resolve, reject) => {
      (this.dirty ? this.next : this.current).push({ resolve, reject });
      this.kick();
    });
  }

  /** Writes whatever is pending; used on close and SIGTERM. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    if (this.dirty) await this.commit();
  }

  private kick(): void {
    if (this.writing !== undefined || !this.dirty) return;
    // setImmediate lets every mutation of the current batch of I/O callbacks land
    // in the same write.
    this.writing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.writeOnce());
  }

  /** Never rejects: failures go to the waiters of that write. */
  private async writeOnce(): Promise<void> {
    this.current = this.next;
    this.next = [];
    this.dirty = false;
    const content = `${JSON.stringify(this.snapshot(), null, 2)}\n`;
    let failure: unknown;
    try {
      await writeFileAtomic(this.file, content);
    } catch (error) {
      failure = error;
      // Keep the change pending so the next commit or flush tries again.
      this.dirty = true;
    }
    const waiters = this.current;
    this.current = [];
    this.writing = undefined;
    for (const w of waiters) {
      if (failure === undefined) w.resolve();
      else w.reject(failure);
    }
    if (this.next.length > 0) this.kick();
  }
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
