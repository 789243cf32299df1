// The rate budget of a file backend's users: a ledger file per budget in the
// backend (`<backend>/.user-groups/rate-budget/<budget>.json`, 0700 directory,
// 0600 files), changed under a lock file of its own. The lock is held for the
// few microseconds of a read and a rename; a holder that died with it (SIGKILL)
// is recognised and its lock broken: on this host at once (its pid is gone),
// from another host once the lock is older than any live holder keeps one.
import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { z } from "zod";
import { bookSlot, holdSlots, type SlotStore } from "./rate-budget";
import { processAlive } from "./shared-state";
import { UserGroupsError } from "../wire/errors";

/** A lock older than this is a dead holder's whatever its host says (a live holder keeps it for microseconds). */
export const LOCK_STALE_MS = 5_000;
/** A booking that cannot get the lock for this long fails (the budget then paces this process alone for a while). */
const LOCK_WAIT_MS = 10_000;

const ledgerSchema = z.object({ version: z.literal(1), nextFree: z.number().finite() });
const lockSchema = z.object({ host: z.string().max(255), pid: z.number().int(), token: z.string().max(64), at: z.number() });
type LockContent = z.infer<typeof lockSchema>;

/** Where this process runs: injected so that tests can play a holder on another host. */
export interface LockHere {
  readonly host: string;
  readonly pid: number;
  readonly pidAlive: (pid: number) => boolean;
}

export const LOCK_HERE: LockHere = { host: hostname(), pid: process.pid, pidAlive: processAlive };

export class RateBudgetDirError extends UserGroupsError {
  constructor(dir: string, why: string) {
    super("rate_budget_dir", `The rate budget directory ${JSON.stringify(dir)} ${why}: refusing to use it.`);
    this.name = "RateBudgetDirError";
  }
}

const BUDGET_ID = /^[0-9a-f]{16,128}$/;

export interface FileSlotStoreOptions {
  readonly here?: LockHere;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export class FileSlotStore implements SlotStore {
  private readonly here: LockHere;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private prepared = false;

  /** `dir`: the ledger directory (an absolute path the automation layer chose inside the backend). */
  constructor(
    readonly dir: string,
    options: FileSlotStoreOptions = {},
  ) {
    if (!path.isAbsolute(dir)) throw new RateBudgetDirError(dir, "is not an absolute path");
    this.here = options.here ?? LOCK_HERE;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  async book(budgetId: string, intervalMs: number): Promise<number> {
    return this.locked(budgetId, (nextFree, now) => {
      const booking = bookSlot(nextFree, now, intervalMs);
      return { nextFree: booking.nextFree, result: booking.at - now };
    });
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    await this.locked(budgetId, (nextFree, now) => ({ nextFree: holdSlots(nextFree, now, holdMs), result: undefined }));
  }

  async close(): Promise<void> {}

  /** The ledger directory: ours, a real directory, 0700 (and its parent `.user-groups`, when ours). */
  private prepare(): void {
    if (this.prepared) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const at of [this.dir, path.dirname(this.dir)]) {
      const stats = lstatSync(at);
      if (!stats.isDirectory()) throw new RateBudgetDirError(at, "is not a directory");
      const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
      if (at === this.dir && !mine) throw new RateBudgetDirError(at, "belongs to another user");
      if (mine && (stats.mode & 0o077) !== 0) chmodSync(at, 0o700);
    }
    this.prepared = true;
  }

  private async locked<T>(budgetId: string, change: (nextFree: number | undefined, now: number) => { nextFree: number; result: T }): Promise<T> {
    if (!BUDGET_ID.test(budgetId)) throw new RateBudgetDirError(budgetId, "is not a budget name");
    this.prepare();
    const ledger = path.join(this.dir, `${budgetId}.json`);
    const lock = path.join(this.dir, `${budgetId}.lock`);
    const token = await this.acquire(lock);
    try {
      const { nextFree, result } = change(readLedger(ledger), this.now());
      writeLedger(ledger, { version: 1, nextFree });
      return result;
    } finally {
      releaseLock(lock, token);
    }
  }

  /** Takes the lock (breaking a dead holder's); its token. */
  private async acquire(lock: string): Promise<string> {
    const mine: LockContent = { host: this.here.host, pid: this.here.pid, token: randomUUID(), at: this.now() };
    const started = this.now();
    for (let attempt = 0; ; attempt++) {
      if (createExclusive(lock, `${JSON.stringify({ ...mine, at: this.now() })}\n`)) return mine.token;
      const holder = readLock(lock);
      if (holder !== "missing" && this.holderIsDead(holder, lock)) {
        breakLock(lock, holder);
        continue;
      }
      if (this.now() - started > LOCK_WAIT_MS) throw new UserGroupsError("rate_budget_locked", "The rate budget's ledger stayed locked by a live holder");
      await this.sleep(1 + Math.floor(Math.random() * Math.min(20, 2 + attempt)));
    }
  }

  /** Same host and its pid gone: dead at once. Otherwise (or unreadable) only when older than any live holder keeps it. */
  private holderIsDead(holder: LockContent | undefined, lock: string): boolean {
    if (holder !== undefined && holder.host === this.here.host && !this.here.pidAlive(holder.pid)) return true;
    const since = holder?.at ?? mtimeOf(lock);
    return since !== undefined && this.now() - since > LOCK_STALE_MS;
  }
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

function readLedger(file: string): number | undefined {
  try {
    const text = readFileSync(file, "utf8");
    if (text.length > 1024) return undefined;
    const parsed = ledgerSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.nextFree : undefined;
  } catch {
    return undefined; // missing, or damaged: the budget starts again from now
  }
}

function writeLedger(file: string, content: z.infer<typeof ledgerSchema>): void {
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${JSON.stringify(content)}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
