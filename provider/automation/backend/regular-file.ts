// Reading and writing files a repository may have planted (a groups file, a
// stack's settings in the work directory). Git commits symlinks, so a path can
// name /dev/zero (endless), a FIFO (a read that never returns) or a file
// outside the checkout. A read here opens without following a final symlink and
// without blocking, checks the opened descriptor (not the path, which can change
// in between) is a regular file, and reads at most `maxBytes` + 1 bytes. A write
// goes to a fresh file created exclusively (a planted symlink is never followed)
// and is renamed over the target (a symlink there is replaced, not written through).
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { UserGroupsError } from "../../wire/errors";

export type RegularFileProblem = "missing" | "symlink" | "not_regular" | "too_large" | "unreadable";

/** A file refused by readRegularFile; `problem` says why, `message` names the file. */
export class FileRefusedError extends UserGroupsError {
  constructor(
    readonly file: string,
    readonly problem: RegularFileProblem,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("file_refused", message, options);
    this.name = "FileRefusedError";
  }
}

const READ_CHUNK = 64 * 1024;

function describeKind(mode: number): string {
  const type = mode & constants.S_IFMT;
  if (type === constants.S_IFDIR) return "a directory";
  if (type === constants.S_IFIFO) return "a FIFO (named pipe)";
  if (type === constants.S_IFCHR) return "a character device";
  if (type === constants.S_IFBLK) return "a block device";
  if (type === constants.S_IFSOCK) return "a socket";
  return "not a regular file";
}

/**
 * The bytes of `file`, which must be a regular file (not a symlink, device,
 * FIFO or directory) of at most `maxBytes`. Never blocks on a FIFO, never reads
 * more than maxBytes + 1 bytes. `what` names the file in messages ("groups file").
 */
export function readRegularFile(file: string, maxBytes: number, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new FileRefusedError(file, "missing", `${file}: no such file`, { cause: error });
    // O_NOFOLLOW on a final symlink: ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD).
    if (code === "ELOOP" || code === "EMLINK" || code === "EFTYPE") {
      throw new FileRefusedError(file, "symlink", `${file}: is a symbolic link; a ${what} must be a regular file (pass the path of the file itself)`, { cause: error });
    }
    throw new FileRefusedError(file, "unreadable", `${file}: cannot read the file (${code ?? "error"})`, { cause: error });
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new FileRefusedError(file, "not_regular", `${file}: is ${describeKind(stats.mode)}; a ${what} must be a regular file`);
    const mebibytes = maxBytes % 1_048_576 === 0 ? ` (${maxBytes / 1_048_576} MiB)` : "";
    const tooLarge = (size: number) =>
      new FileRefusedError(file, "too_large", `${file}: ${size} bytes is over the limit of ${maxBytes} bytes${mebibytes} for a ${what}`);
    if (stats.size > maxBytes) throw tooLarge(stats.size);
    // The size is a hint (the file may grow, /proc files say 0): the read itself is bounded.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, maxBytes + 1 - total));
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(read === chunk.length ? chunk : chunk.subarray(0, read));
      total += read;
      if (total > maxBytes) throw tooLarge(total);
    }
    return Buffer.concat(chunks, total);
  } catch (error) {
    if (error instanceof FileRefusedError) throw error;
    throw new FileRefusedError(file, "unreadable", `${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? "error"})`, { cause: error });
  } finally {
    closeSync(fd);
  }
}

/** readRegularFile, or undefined when there is no such file. */
export function readRegularFileIfPresent(file: string, maxBytes: number, what: string): Buffer | undefined {
  try {
    return readRegularFile(file, maxBytes, what);
  } catch (error) {
    if (error instanceof FileRefusedError && error.problem === "missing") return undefined;
    throw error;
  }
}

/** Is there anything (a file, a symlink, even a dangling one) at this path? */
export function pathTaken(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * Writes `file` (mode 0600) all at once: to a new file beside it, created
 * exclusively under a random name, then renamed over it. A symlink at `file`
 * is replaced by the new file; nothing it points to is written.
 */
export function writeFileReplacing(file: string, content: string | Buffer): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    try {
      const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
      for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
