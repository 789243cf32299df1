// The run lease of a file backend: a generation-numbered lease file that one
// exclusive link publishes, renewed by its holder.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { type Clock, systemClock } from "../../clock";
import type { AcquireOutcome, LeaseRules, LeaseStore, LeaseStoreOptions, PulumiLock } from "../backend";
import { FILE_LEASE_TIMING, parseRunRecord, type RunClaim, type RunRecord, stackPath } from "../run-record";
import { assertValidStackName } from "../stack-name";
import { PROCESS_WAITER, type Waiter } from "../waiter";
import { privateDirs, writePrivate } from "./private-files";
import { readLockHolders } from "./pulumi-locks";

const LEASE_FILE = /^lease-(\d{1,15})\.json$/;
const WAITER_FILE = /^([A-Za-z0-9_-]{1,64})\.json$/;

/**
 * A waiter not seen for this long has stopped waiting (gave up, died): it no
 * longer keeps later waiters from the lease. Above the longest pause between two
 * tries of a live waiter (the lock wait's backoff is at most 5 s).
 */
export const FILE_WAITER_STALE_MS = 8_000;

/**
 * A file backend's lease: `<backend>/.user-groups/leases/<project>/<stack>/lease-<n>.json`.
 * Each new holder publishes generation n+1 with an exclusive link, so of two
 * runs taking a free (or dead) lease at once exactly one wins; the holder
 * alone rewrites its own generation. Waiters are served first come: each
 * (process) keeps a file in `<backend>/.user-groups/lease-waiters/<project>/<stack>/` (when it began to wait, when it last tried), and a
 * free lease goes to the live waiter that began first (PostgreSQL's rule,
 * postgres/lease-store.ts; here on this host's clock, so across hosts only as fair as
 * their clocks agree).
 */
export class FileLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  readonly timing = FILE_LEASE_TIMING;
  private readonly dir: string;
  private held: number | undefined;
  private readonly waiters: string;
  private readonly rules: LeaseRules;
  private readonly clock: Clock;
  private readonly waiter: Waiter;
  /** Who waits in the lease's queue: this process, or as told (tests play several replicas). */
  private readonly waiterId: string;

  constructor(
    private readonly backendDir: string,
    private readonly project: string,
    private readonly stack: string,
    options: LeaseStoreOptions,
  ) {
    this.rules = options.rules;
    this.clock = options.clock ?? systemClock;
    this.waiter = options.waiter ?? PROCESS_WAITER;
    this.waiterId = options.waiterId ?? this.waiter.id;
    this.dir = path.join(backendDir, ".user-groups", "leases", project, encodeURIComponent(assertValidStackName(stack)));
    this.waiters = path.join(backendDir, ".user-groups", "lease-waiters", project, encodeURIComponent(stack));
  }

  /**
   * Puts this store in the queue (or says it is still there) and answers whether
   * a live waiter began before it; stale waiters' files are swept.
   */
  private queue(): boolean {
    const now = this.clock.now();
    privateDirs(this.backendDir, this.waiters);
    const mine = this.queuedSince(now);
    writePrivate(path.join(this.waiters, `${this.waiterId}.json`), `${JSON.stringify({ since: mine, seenAt: now })}\n`, false);
    let ahead = false;
    for (const name of readdirSync(this.waiters)) {
      const id = WAITER_FILE.exec(name)?.[1];
      if (id === undefined || id === this.waiterId) continue;
      let other: { since?: unknown; seenAt?: unknown };
      try {
        other = JSON.parse(readFileSync(path.join(this.waiters, name), "utf8")) as typeof other;
      } catch {
        continue; // gone meanwhile, or torn: counts as no waiter
      }
      if (typeof other.since !== "number" || typeof other.seenAt !== "number" || now - other.seenAt > FILE_WAITER_STALE_MS) {
        rmSync(path.join(this.waiters, name), { force: true });
        continue;
      }
      if (other.since < mine || (other.since === mine && id < this.waiterId)) ahead = true;
    }
    return ahead;
  }

  /** When this waiter began to wait: where it stood while it is live (closed stores too), else now (a new wait). */
  private queuedSince(now: number): number {
    const key = path.join(this.waiters, this.waiterId);
    const place = this.waiter.places.get(key);
    const since = place !== undefined && typeof place.since === "number" && now - place.triedAt <= FILE_WAITER_STALE_MS ? Math.min(place.since, now) : now;
    this.waiter.places.set(key, { since, triedAt: now });
    return since;
  }

  /** Out of the queue: `forget` when the lease was taken (else the place is kept for this process's next store). */
  private leaveQueue(forget: boolean): void {
    if (forget) this.waiter.places.delete(path.join(this.waiters, this.waiterId));
    rmSync(path.join(this.waiters, `${this.waiterId}.json`), { force: true });
  }

  private generations(): number[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .map((name) => LEASE_FILE.exec(name)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  private fileOf(generation: number): string {
    return path.join(this.dir, `lease-${generation}.json`);
  }

  private read(generation: number): RunRecord | undefined | "missing" {
    try {
      return parseRunRecord(readFileSync(this.fileOf(generation), "utf8"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
      throw error;
    }
  }

  async peek(): Promise<RunRecord | undefined> {
    // The newest generation; one replaced meanwhile (its file gone) is read again from the listing.
    for (let attempt = 0; attempt < 3; attempt++) {
      const newest = this.generations().at(-1);
      if (newest === undefined) return undefined;
      const record = this.read(newest);
      if (record !== "missing") return record;
    }
    return undefined;
  }

  /** `breakLive`: a person decided the holder is gone (`recover --break-lease`); its record is inherited as a dead run's. */
  async tryAcquire(me: RunClaim, options: { readonly breakLive?: boolean } = {}): Promise<AcquireOutcome> {
    privateDirs(this.backendDir, this.dir);
    const generations = this.generations();
    const current = generations.at(-1) ?? 0;
    const previous = current > 0 ? this.read(current) : undefined;
    // First come, first served (a person breaking a live lease goes first).
    const ahead = options.breakLive ? false : this.queue();
    if (previous === "missing") return { acquired: false as const }; // pruned under us: look again
    // A record that does not parse (torn by a crash, or not ours) holds nothing.
    if (!options.breakLive && previous !== undefined && !previous.released && this.rules.holderLive(previous, this.clock.now())) return { acquired: false as const, ...(previous ? { holder: previous } : {}) };
    if (ahead) return { acquired: false as const };
    const record = this.rules.successor(previous, me, this.timing.ttlMs);
    if (!writePrivate(this.fileOf(current + 1), `${JSON.stringify(record)}\n`, true)) return { acquired: false as const };
    this.leaveQueue(true);
    this.held = current + 1;
    for (const old of generations) rmSync(this.fileOf(old), { force: true });
    return { acquired: true as const, record };
  }

  async write(record: RunRecord): Promise<boolean> {
    if (this.held === undefined) return false;
    // Ours only while no later generation exists and ours is still there with our run id.
    const latest = this.generations().at(-1);
    const mine = this.read(this.held);
    if (latest !== this.held || mine === "missing" || mine?.runId !== record.runId) {
      this.held = undefined;
      this.onLost?.();
      return false;
    }
    writePrivate(this.fileOf(this.held), `${JSON.stringify(record)}\n`, false);
    return true;
  }

  async release(record: RunRecord): Promise<void> {
    await this.write({ ...record, released: true });
    this.held = undefined;
  }

  async pulumiLocks(): Promise<PulumiLock[]> {
    const where = stackPath(this.stack, this.project);
    return readLockHolders(this.backendDir, where.project, where.stack)
      .filter((holder) => where.org === undefined || path.basename(path.dirname(path.dirname(path.dirname(holder.file)))) === where.org)
      .map((holder) => ({ key: holder.file, pid: holder.pid, hostname: holder.hostname, ...(holder.timestamp !== undefined ? { timestamp: holder.timestamp } : {}) }));
  }

  async removePulumiLock(lock: PulumiLock): Promise<void> {
    rmSync(lock.key, { force: true });
    rmSync(`${lock.key}.attrs`, { force: true });
  }

  /** Out of the queue (a run that gave up holds nobody up); this process's next store takes the place back. */
  async close(): Promise<void> {
    this.leaveQueue(false);
  }
}
