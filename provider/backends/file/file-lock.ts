// A lock file beside shared state in a file backend (the rate budget's ledger,
// the shard directory): created exclusively (0600, never through a symlink),
// held for a short critical section, released only by its holder (a token).
// A holder that died with it (SIGKILL) is recognised and its lock broken: on
// this host at once (its pid is gone), from any host once the lock is older
// than a live holder ever keeps it.
import { randomUUID } from "node:crypto";
import { closeSync, constants, linkSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { z } from "zod";
import { type Clock, systemClock } from "../../clock";
import { processAlive } from "./processes";

const lockSchema = z.object({ host: z.string().max(255), pid: z.number().int(), token: z.string().max(64), at: z.number() });
type LockContent = z.infer<typeof lockSchema>;

/** Where this process runs: injected so that tests can play a holder on another host. */
export interface LockHere {
  readonly host: string;
  readonly pid: number;
  readonly pidAlive: (pid: number) => boolean;
}

export const LOCK_HERE: LockHere = { host: hostname(), pid: process.pid, pidAlive: processAlive };

export interface FileLockOptions {
  /** A lock older than this is a dead holder's whatever its host says. */
  readonly staleMs: number;
  /** Waiting longer than this for a live holder fails with `timedOut()`. */
  readonly waitMs: number;
  readonly timedOut: () => Error;
  readonly here?: LockHere;
  /** What time it is (the lock's age), how to wait for a live holder, the jitter of those waits (default: the system's). */
  readonly clock?: Clock;
}

/** Runs `work` holding the lock file `lock` (its directory must exist and be private). */
export async function withFileLock<T>(lock: string, options: FileLockOptions, work: () => T): Promise<T> {
  const token = await acquire(lock, options);
  try {
    return work();
  } finally {
    releaseLock(lock, token);
  }
}

/** Takes the lock (breaking a dead holder's); its token. */
async function acquire(lock: string, options: FileLockOptions): Promise<string> {
  const here = options.here ?? LOCK_HERE;
  const clock = options.clock ?? systemClock;
  const token = randomUUID();
  const started = clock.now();
  for (let attempt = 0; ; attempt++) {
    if (createExclusive(lock, `${JSON.stringify({ host: here.host, pid: here.pid, token, at: clock.now() })}\n`)) return token;
    const holder = readLock(lock);
    if (holder !== "missing" && holderIsDead(holder, lock, here, clock.now(), options.staleMs)) {
      breakLock(lock, holder);
      continue;
    }
    if (clock.now() - started > options.waitMs) throw options.timedOut();
    await clock.sleep(1 + Math.floor(clock.random() * Math.min(20, 2 + attempt)));
  }
}

/** Same host and its pid gone: dead at once. Otherwise (or unreadable) only when older than any live holder keeps it. */
function holderIsDead(holder: LockContent | undefined, lock: string, here: LockHere, now: number, staleMs: number): boolean {
  if (holder !== undefined && holder.host === here.host && !here.pidAlive(holder.pid)) return true;
  const since = holder?.at ?? mtimeOf(lock);
  return since !== undefined && now - since > staleMs;
}

function createExclusive(file: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The lock's content; undefined when unreadable (a holder killed between create and write), "missing" when gone. */
function readLock(lock: string): LockContent | undefined | "missing" {
  try {
    const text = readFileSync(lock, "utf8");
    if (text.length > 1024) return undefined;
    const parsed = lockSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    return undefined;
  }
}

function mtimeOf(file: string): number | undefined {
  try {
    return lstatSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Moves a dead holder's lock aside. Two breakers may race: what was moved is
 * checked, and a lock that turns out to be a new live holder's is put back
 * (link: only if no one took the name meanwhile).
 */
function breakLock(lock: string, judged: LockContent | undefined): void {
  const aside = `${lock}.${randomUUID()}.broken`;
  try {
    renameSync(lock, aside);
  } catch {
    return; // someone else moved it first
  }
  const moved = readLock(aside);
  const same = moved === undefined || moved === "missing" ? judged === undefined : judged !== undefined && moved.token === judged.token;
  if (!same) {
    try {
      linkSync(aside, lock);
    } catch {
      // a third process holds the name now: the moved holder's unlock finds someone else's token and leaves it
    }
  }
  rmSync(aside, { force: true });
}

function releaseLock(lock: string, token: string): void {
  const current = readLock(lock);
  if (current !== undefined && current !== "missing" && current.token === token) rmSync(lock, { force: true });
}
