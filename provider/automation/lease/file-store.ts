// The run lease of a file backend: a generation-numbered lease file that one
// exclusive link publishes, renewed by its holder.
import type { PulumiLock } from "../model";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { readLockHolders } from "../backend";
import { assertValidStackName } from "../model";
import { RunClaim, RunRecord, parseRunRecord, Here, HERE, leaseStateOf, successorRecord, LeaseStore, stackPath } from "./record";
import { writePrivate, privateDirs } from "../../client/shared-state";
import { type Clock, systemClock } from "../../clock";

const LEASE_FILE = /^lease-(\d{1,15})\.json$/;

/**
 * A file backend's lease: `<backend>/.user-groups/leases/<project>/<stack>/lease-<n>.json`.
 * Each new holder publishes generation n+1 with an exclusive link, so of two
 * runs taking a free (or dead) lease at once exactly one wins; the holder
 * alone rewrites its own generation.
 */
export class FileLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  private readonly dir: string;
  private held: number | undefined;

  constructor(
    private readonly backendDir: string,
    private readonly project: string,
    private readonly stack: string,
    private readonly here: Here = HERE,
    private readonly clock: Clock = systemClock,
  ) {
    this.dir = path.join(backendDir, ".user-groups", "leases", project, encodeURIComponent(assertValidStackName(stack)));
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

  /** `breakLive`: a person decided the holder is gone (`recover --break-lease`); its record is inherited as a dead run's. */
  async tryAcquire(me: RunClaim, options: { readonly breakLive?: boolean } = {}) {
    privateDirs(this.backendDir, this.dir);
    const generations = this.generations();
    const current = generations.at(-1) ?? 0;
    const previous = current > 0 ? this.read(current) : undefined;
    if (previous === "missing") return { acquired: false as const }; // pruned under us: look again
    // A record that does not parse (torn by a crash, or not ours) holds nothing.
    if (!options.breakLive && leaseStateOf(previous, this.clock.now(), this.here) === "live") return { acquired: false as const, ...(previous ? { holder: previous } : {}) };
    const record = successorRecord(previous, me);
    if (!writePrivate(this.fileOf(current + 1), `${JSON.stringify(record)}\n`, true)) return { acquired: false as const };
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

  async close(): Promise<void> {}
}
