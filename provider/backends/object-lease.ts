// The run lease of an object-store backend (s3://, and the others built on
// object-client.ts): one object per stack, `.user-groups/leases/<project>/<stack>/lease.json`,
// holding the run record with an epoch and an expiry on the store's own clock.
// A new holder takes it with the store's conditional write (create-if-absent for
// a fresh stack, compare-and-swap on the version it read otherwise), so of
// racing takers exactly one wins; the holder renews with compare-and-swap on the
// version it last wrote, so a holder that was taken over finds out on its next
// write. Waiters keep an object each under `.user-groups/lease-waiters/...` and
// are served first come (the store's clock). The run's provider processes get
// the epoch (fenceEnv) and check it before each request (ObjectRunFence). The
// run's engine works on a private copy of the stack (object-engine-copy.ts),
// made when the lease is taken and committed with conditional writes: before
// each provider request and when the lease is let go (docs/object-stores.md).
import { z } from "zod";
import { type Clock, systemClock } from "../clock";
import { UserGroupsError } from "../wire/errors";
import { type AcquireOutcome, type LeaseRules, type LeaseStore, type LeaseStoreOptions, type PulumiLock, type RunFence, RunFencedError } from "./backend";
import { type ObjectClient, verifyConditions } from "./object-client";
import { commitCopy, copyExists, type EngineCopy, OBJECT_COPY_ENV, openEngineCopy } from "./object-engine-copy";
import { LEASE_TTL_MS, type LeaseTiming, parseRunRecord, RENEW_EVERY_MS, type RunClaim, type RunRecord, stackPath } from "./run-record";
import { assertValidStackName } from "./stack-name";
import { PROCESS_WAITER, type Waiter } from "./waiter";

export const OBJECT_LEASE_TIMING: LeaseTiming = { ttlMs: LEASE_TTL_MS, renewEveryMs: RENEW_EVERY_MS };
/**
 * How long an object-store lease lives past a renewal, when the default (20 s) is not wanted: the time a dead or cut-off
 * holder keeps the stack from the others. Renewed every quarter of it. Whole milliseconds, 6 s to 5 min: a shorter lease
 * costs a renewal request more often and is lost sooner by a holder that stalls (its runs then fail retryable).
 */
export const OBJECT_LEASE_TTL_ENV = "USER_GROUPS_OBJECT_LEASE_TTL_MS";
const MIN_TTL_MS = 6_000;
const MAX_TTL_MS = 300_000;

/** The lease timing this environment asks for (OBJECT_LEASE_TTL_ENV), the default without it; out of range: refused, coded. */
export function objectLeaseTiming(env: NodeJS.ProcessEnv = process.env): LeaseTiming {
  const raw = env[OBJECT_LEASE_TTL_ENV]?.trim();
  if (raw === undefined || raw === "") return OBJECT_LEASE_TIMING;
  const ttlMs = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(ttlMs >= MIN_TTL_MS && ttlMs <= MAX_TTL_MS)) {
    throw new UserGroupsError("invalid_tuning", `${OBJECT_LEASE_TTL_ENV} must be a whole number of milliseconds from ${MIN_TTL_MS} to ${MAX_TTL_MS} (its value is not shown)`);
  }
  return { ttlMs, renewEveryMs: Math.floor(ttlMs / 4) };
}
/** A waiter not seen for this long has stopped waiting (above the lock wait's longest pause, 5 s). */
export const OBJECT_WAITER_STALE_MS = 8_000;
/** The store's clock is read off whole-second `Date` headers: a lease counts as expired only this long past its expiry. */
const CLOCK_MARGIN_MS = 1_000;
/** A provider's request goes out only while its run's lease has this long to live (as PostgreSQL's FENCE_MARGIN_MS). */
export const OBJECT_FENCE_MARGIN_MS = 3_000;

/** The variables a run's provider processes find their fence by. */
export const OBJECT_FENCE_ENV = {
  /** The run's epoch. */
  epoch: "USER_GROUPS_OBJECT_FENCE",
  /** The backend URL (no credential in it). */
  url: "USER_GROUPS_OBJECT_FENCE_URL",
  /** The lease object's key. */
  key: "USER_GROUPS_OBJECT_FENCE_KEY",
} as const;

const envelopeSchema = z.object({ epoch: z.number().int().nonnegative(), expiresAt: z.number(), record: z.unknown() });
interface Envelope {
  readonly epoch: number;
  readonly expiresAt: number;
  readonly record: RunRecord | undefined;
}

function parseEnvelope(body: string): Envelope | undefined {
  try {
    const parsed = envelopeSchema.safeParse(JSON.parse(body));
    if (!parsed.success) return undefined;
    return { epoch: parsed.data.epoch, expiresAt: parsed.data.expiresAt, record: parseRunRecord(JSON.stringify(parsed.data.record)) };
  } catch {
    return undefined;
  }
}

const seg = (s: string) => encodeURIComponent(s);
export const leaseKeyOf = (project: string, stack: string) => `.user-groups/leases/${seg(project)}/${seg(assertValidStackName(stack))}/lease.json`;
const WAITER_KEY = /\/([A-Za-z0-9_-]{1,64})\.json$/;
const LOCK_KEY = /^\.pulumi\/locks\/([^/]{1,255})\/([^/]{1,255})\/([^/]{1,255})\/[^/]{1,255}\.json$/;
const MAX_LOCK_BYTES = 64 * 1024;

export class ObjectLeaseStore implements LeaseStore {
  onLost: (() => void) | undefined;
  readonly timing: LeaseTiming;
  /** The engine never writes to the store: it works on a private copy (object-engine-copy.ts). */
  readonly privateEngine = true;
  private held: { version: string; epoch: number; runId: string } | undefined;
  /** The held lease's private copy of the stack. */
  private copy: EngineCopy | undefined;
  private readonly key: string;
  private readonly waiters: string;
  private readonly rules: LeaseRules;
  private readonly waiter: Waiter;
  private readonly waiterId: string;
  private readonly waiterStaleMs: number;

  constructor(
    private readonly client: ObjectClient,
    private readonly project: string,
    private readonly stack: string,
    options: LeaseStoreOptions,
  ) {
    this.rules = options.rules;
    this.timing = options.timing ?? objectLeaseTiming();
    this.waiter = options.waiter ?? PROCESS_WAITER;
    this.waiterId = options.waiterId ?? this.waiter.id;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(this.waiterId)) throw new Error("a waiter id is letters, digits, - and _");
    this.waiterStaleMs = options.waiterStaleMs ?? OBJECT_WAITER_STALE_MS;
    this.key = leaseKeyOf(project, stack);
    this.waiters = `.user-groups/lease-waiters/${seg(project)}/${seg(stack)}/`;
  }

  private get placeKey(): string {
    return `${this.client.place}\u0000${this.waiters}${this.waiterId}`;
  }

  /** Puts this store in the queue (or says it still is) and answers whether a live waiter began before it; stale waiters are swept. */
  private async queue(now: number): Promise<boolean> {
    const place = this.waiter.places.get(this.placeKey);
    const since = place !== undefined && typeof place.since === "number" && now - place.triedAt <= this.waiterStaleMs ? Math.min(place.since, now) : now;
    this.waiter.places.set(this.placeKey, { since, triedAt: now });
    await this.client.put(`${this.waiters}${this.waiterId}.json`, JSON.stringify({ since, seenAt: now }));
    const others = (await this.client.list(this.waiters)).filter((key) => WAITER_KEY.exec(key)?.[1] !== undefined && WAITER_KEY.exec(key)![1] !== this.waiterId);
    const seen = await Promise.all(
      others.map(async (key) => {
        const body = (await this.client.get(key))?.body;
        let other: { since?: unknown; seenAt?: unknown } = {};
        try {
          other = body !== undefined && body.length < 1_024 ? (JSON.parse(body) as typeof other) : {};
        } catch {
          // torn or not ours: no waiter
        }
        if (typeof other.since !== "number" || typeof other.seenAt !== "number" || now - other.seenAt > this.waiterStaleMs) {
          if (body !== undefined) await this.client.remove(key);
          return false;
        }
        const id = WAITER_KEY.exec(key)![1]!;
        return other.since < since || (other.since === since && id < this.waiterId);
      }),
    );
    return seen.some(Boolean);
  }

  private async leaveQueue(forget: boolean): Promise<void> {
    if (forget) this.waiter.places.delete(this.placeKey);
    await this.client.remove(`${this.waiters}${this.waiterId}.json`);
  }

  async peek(): Promise<RunRecord | undefined> {
    const current = await this.client.get(this.key);
    return current === undefined ? undefined : parseEnvelope(current.body)?.record;
  }

  async tryAcquire(me: RunClaim, options: { readonly breakLive?: boolean } = {}): Promise<AcquireOutcome> {
    await verifyConditions(this.client);
    const current = await this.client.get(this.key);
    const envelope = current === undefined ? undefined : parseEnvelope(current.body);
    const now = this.client.now();
    const ahead = options.breakLive ? false : await this.queue(now);
    const previous = envelope?.record;
    const live = previous !== undefined && !previous.released && now <= envelope!.expiresAt + CLOCK_MARGIN_MS;
    if (live && !options.breakLive) return { acquired: false, holder: previous, retryInMs: Math.max(100, envelope!.expiresAt + CLOCK_MARGIN_MS - now + 100) };
    if (ahead) return { acquired: false };
    const epoch = (envelope?.epoch ?? 0) + 1;
    const record: RunRecord = { ...this.rules.successor(previous, me, this.timing.ttlMs), epoch };
    const body = JSON.stringify({ epoch, expiresAt: now + this.timing.ttlMs, record });
    const version = current === undefined ? await this.client.create(this.key, body) : await this.client.replace(this.key, body, current.version);
    if (version === undefined) return { acquired: false };
    this.held = { version, epoch, runId: record.runId };
    await this.leaveQueue(true);
    try {
      // The new holder's first act: its private copy, the store's checkpoint version moved on (a stale holder's commit is refused from here on).
      this.copy = await openEngineCopy(this.client, this.project, this.stack, epoch);
    } catch (error) {
      await this.rewrite({ ...record, released: true }, this.client.now()).catch(() => undefined);
      this.held = undefined;
      throw error;
    }
    return { acquired: true, record };
  }

  /** Rewrites the held lease (compare-and-swap on the version this holder last wrote); `expiresAt` on the store's clock. */
  private async rewrite(record: RunRecord, expiresAt: number): Promise<boolean> {
    const held = this.held;
    if (held === undefined || record.runId !== held.runId) return false;
    const body = JSON.stringify({ epoch: held.epoch, expiresAt, record: { ...record, epoch: held.epoch } });
    const version = await this.client.replace(this.key, body, held.version);
    if (version === undefined) {
      this.held = undefined;
      this.onLost?.();
      return false;
    }
    held.version = version;
    return true;
  }

  write(record: RunRecord): Promise<boolean> {
    return this.rewrite(record, this.client.now() + this.timing.ttlMs);
  }

  /**
   * Commits the run's copy, then lets go. A copy that cannot be committed (refused:
   * another holder; or the store failed) is not released but abandoned, so that the
   * next holder takes this run over as a dead one's (its pending creates are in the
   * store: committed before each request); the commit's error is thrown.
   */
  async release(record: RunRecord): Promise<void> {
    try {
      await this.copy?.commit();
    } catch (error) {
      await this.abandon();
      throw error;
    }
    try {
      await this.rewrite({ ...record, released: true }, this.client.now());
    } finally {
      this.held = undefined;
      this.disposeCopy();
    }
  }

  private disposeCopy(): void {
    this.copy?.dispose();
    this.copy = undefined;
  }

  /** A lost run lets go unreleased: expired now, so the next holder takes its leftovers over at once. */
  async abandon(): Promise<void> {
    this.disposeCopy();
    const held = this.held;
    if (held === undefined) return;
    const current = await this.client.get(this.key);
    const record = current === undefined ? undefined : parseEnvelope(current.body)?.record;
    if (current !== undefined && current.version === held.version && record !== undefined) await this.rewrite(record, 0);
    this.held = undefined;
  }

  fenceEnv(record: RunRecord): Record<string, string> {
    return {
      // The engine's backend: the private copy while the lease is held (the store's own URL otherwise: nothing to fence).
      PULUMI_BACKEND_URL: this.copy?.url ?? this.client.url,
      ...(this.copy ? { [OBJECT_COPY_ENV]: this.copy.dir } : {}),
      [OBJECT_FENCE_ENV.epoch]: String(record.epoch ?? this.held?.epoch ?? 0),
      [OBJECT_FENCE_ENV.url]: this.client.url,
      [OBJECT_FENCE_ENV.key]: this.key,
    };
  }

  async pulumiLocks(): Promise<PulumiLock[]> {
    const where = stackPath(this.stack, this.project);
    const keys = (await this.client.list(".pulumi/locks/")).filter((key) => {
      const m = LOCK_KEY.exec(key);
      return m !== null && m[2] === where.project && m[3] === where.stack && (where.org === undefined || m[1] === where.org);
    });
    const locks = await Promise.all(
      keys.map(async (key): Promise<PulumiLock | undefined> => {
        const body = (await this.client.get(key))?.body;
        if (body === undefined) return undefined; // released meanwhile
        let parsed: { pid?: unknown; hostname?: unknown; timestamp?: unknown } = {};
        try {
          parsed = body.length <= MAX_LOCK_BYTES ? (JSON.parse(body) as typeof parsed) : {};
        } catch {
          // not Pulumi's: a holder we cannot name
        }
        return {
          key,
          pid: typeof parsed.pid === "number" ? parsed.pid : -1,
          hostname: typeof parsed.hostname === "string" ? parsed.hostname.slice(0, 255) : "",
          ...(typeof parsed.timestamp === "string" ? { timestamp: parsed.timestamp.slice(0, 64) } : {}),
        };
      }),
    );
    return locks.filter((lock): lock is PulumiLock => lock !== undefined);
  }

  async removePulumiLock(lock: PulumiLock): Promise<void> {
    if (!LOCK_KEY.test(lock.key)) throw new Error("not a key of Pulumi's lock");
    await this.client.remove(lock.key);
  }

  async close(): Promise<void> {
    this.disposeCopy();
    await this.leaveQueue(false).catch(() => undefined);
  }
}

/** A provider process's check before each request: is its run's epoch still the lease's, with time to live? */
export class ObjectRunFence implements RunFence {
  constructor(
    private readonly client: ObjectClient,
    private readonly key: string,
    private readonly epoch: number,
    private readonly clock: Clock = systemClock,
    /** The run's private copy (OBJECT_COPY_ENV): committed before each request, so that what the engine recorded is in the store first. */
    private readonly copyDir?: string,
  ) {}

  async check(): Promise<void> {
    if (this.copyDir !== undefined) {
      if (!copyExists(this.copyDir)) throw new RunFencedError("the run's private copy of the stack is gone (the run ended)");
      await commitCopy(this.client, this.copyDir);
    }
    let last: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const current = await this.client.get(this.key);
        const envelope = current === undefined ? undefined : parseEnvelope(current.body);
        if (envelope !== undefined && envelope.epoch === this.epoch && envelope.record?.released === false && envelope.expiresAt - this.client.now() > OBJECT_FENCE_MARGIN_MS) return;
        throw new RunFencedError(`the run's lease (epoch ${this.epoch}) is no longer current, or expires within ${OBJECT_FENCE_MARGIN_MS / 1000} s`);
      } catch (error) {
        if (error instanceof RunFencedError) throw error;
        last = error;
        if (attempt < 3) await this.clock.sleep(300 * attempt);
      }
    }
    const code = (last as { code?: unknown })?.code;
    throw new RunFencedError(`the run's lease could not be confirmed (${typeof code === "string" ? code : "error"})`);
  }
}
