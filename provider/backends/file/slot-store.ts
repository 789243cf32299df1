// The rate budget of a file backend's users: a ledger file per budget in the
// backend (`<backend>/.user-groups/rate-budget/<budget>.json`, 0700 directory,
// 0600 files), changed under a lock file of its own. The lock is held for the
// few microseconds of a read and a rename; a holder that died with it (SIGKILL)
// is recognised and its lock broken: on this host at once (its pid is gone),
// from another host once the lock is older than any live holder keeps one.
import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, constants, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { LOCK_HERE, type LockHere, withFileLock } from "./file-lock";
import type { SlotRules, SlotStore } from "../backend";
import { type Clock, systemClock } from "../../clock";
import { UserGroupsError } from "../../wire/errors";

/** A lock older than this is a dead holder's whatever its host says (a live holder keeps it for microseconds). */
export const LOCK_STALE_MS = 5_000;
/** A booking that cannot get the lock for this long fails (the budget then paces this process alone for a while). */
const LOCK_WAIT_MS = 10_000;

const ledgerSchema = z.object({ version: z.literal(1), nextFree: z.number().finite() });

export class RateBudgetDirError extends UserGroupsError {
  constructor(dir: string, why: string) {
    super("rate_budget_dir", `The rate budget directory ${JSON.stringify(dir)} ${why}: refusing to use it.`);
    this.name = "RateBudgetDirError";
  }
}

const BUDGET_ID = /^[0-9a-f]{16,128}$/;

export interface FileSlotStoreOptions {
  readonly here?: LockHere;
  /** The ledger's time, and the lock's waits and jitter (default: the system's). */
  readonly clock?: Clock;
  /** The slot arithmetic (client/rate-budget/budget.ts), applied under the ledger's lock. */
  readonly rules: SlotRules;
}

export class FileSlotStore implements SlotStore {
  private readonly here: LockHere;
  private readonly clock: Clock;
  private prepared = false;

  /** `dir`: the ledger directory (an absolute path the automation layer chose inside the backend). */
  constructor(
    readonly dir: string,
    private readonly options: FileSlotStoreOptions,
  ) {
    if (!path.isAbsolute(dir)) throw new RateBudgetDirError(dir, "is not an absolute path");
    this.here = options.here ?? LOCK_HERE;
    this.clock = options.clock ?? systemClock;
  }

  async book(budgetId: string, intervalMs: number): Promise<number> {
    return this.locked(budgetId, (nextFree, now) => {
      const booking = this.options.rules.book(nextFree, now, intervalMs);
      return { nextFree: booking.nextFree, result: booking.at - now };
    });
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    await this.locked(budgetId, (nextFree, now) => ({ nextFree: this.options.rules.hold(nextFree, now, holdMs), result: undefined }));
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
    const lockOptions = {
      staleMs: LOCK_STALE_MS,
      waitMs: LOCK_WAIT_MS,
      timedOut: () => new UserGroupsError("rate_budget_locked", "The rate budget's ledger stayed locked by a live holder"),
      here: this.here,
      clock: this.clock,
    };
    return withFileLock(path.join(this.dir, `${budgetId}.lock`), lockOptions, () => {
      const { nextFree, result } = change(readLedger(ledger), this.clock.now());
      writeLedger(ledger, { version: 1, nextFree });
      return result;
    });
  }
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
