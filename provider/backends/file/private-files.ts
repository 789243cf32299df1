// Files of shared state inside a backend directory: written whole through a
// temporary name (mode 0600), in directories made 0700.
import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

/** Writes a file (mode 0600) through a temporary name; `exclusive` publishes it only if `file` does not exist yet. */
export function writePrivate(file: string, text: string, exclusive: boolean): boolean {
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (!exclusive) {
      renameSync(temporary, file);
      return true;
    }
    linkSync(temporary, file); // fails if the name exists: one winner
    return true;
  } catch (error) {
    if (exclusive && (error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

export function privateDirs(root: string, dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Every level we made or own, from the backend down: 0700 (mkdir's mode is masked by the umask).
  for (let at = dir; at.startsWith(root) && at !== path.dirname(root); at = path.dirname(at)) {
    const stats = lstatSync(at);
    const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
    if (at !== root && mine && stats.isDirectory() && (stats.mode & 0o077) !== 0) chmodSync(at, 0o700);
    if (at === root) break;
  }
}
