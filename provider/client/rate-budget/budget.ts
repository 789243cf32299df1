// One rate budget per API key (issue #24 item 3): the service allows N requests
// per window per key (CONTRACT: 180 per minute), whoever sends them. Every
// request of a client takes a slot from its key's budget before it is sent;
// slots are spaced evenly at the allowed rate less a small margin, so no window
// of the service (fixed or sliding) sees more than it allows. Processes that use
// the same key (the provider processes of concurrent runs, shards, fleet
// replicas) book their slots in one shared store (rate-budget-stores.ts), so
// together they stay within the one allowance instead of each assuming all of it.
//
// The store keeps one number per budget: when its next free slot begins. A
// booking takes max(next free, now) and moves next free one interval on, in one
// atomic step of the store. Each process books one slot at a time (the next
// only when the previous one has begun), so a process killed mid-run wastes at
// most one slot of the others', and no store is asked more than once per slot.
//
// The 429 reaction stays (pacer.ts): when the real limit is lower than the
// configured one, a 429 still slows this process; it also holds every sharer
// of the budget off for its Retry-After.
import { scryptSync } from "node:crypto";
import { type Clock, systemClock } from "../../clock";
import { errorCode, type SlotRules, type SlotStore } from "../../backends";
import { UserGroupsError } from "../../wire/errors";

export type { SlotStore } from "../../backends";

/** N requests per window, as the service (or `--rate-limit N/SECONDS` of the fake server) allows them per key. */
export interface RateLimit {
  readonly requests: number;
  readonly windowMs: number;
}

/** CONTRACT: 180 requests per minute per key. */
export const DEFAULT_RATE_LIMIT: RateLimit = { requests: 180, windowMs: 60_000 };

/** Slots are spaced for this fraction of the allowance: absorbs late starts and timing noise (3% under the limit). */
export const RATE_SAFETY = 0.97;

/** A next free slot further ahead than this is not a real booking (a clock jump, a damaged ledger): start again from now. */
export const MAX_AHEAD_MS = 15 * 60_000;

/** A Retry-After holds the budget off for at most this long (a bogus header must not stall every sharer for days). */
export const MAX_HOLD_MS = 10 * 60_000;

/** The spacing of slots for a limit: window / (requests × safety). */
export function slotIntervalMs(limit: RateLimit, safety: number = RATE_SAFETY): number {
  return limit.windowMs / (limit.requests * safety);
}

/** One booking: when the slot begins and where the budget's next free slot is then. */
export interface Booking {
  readonly at: number;
  readonly nextFree: number;
}

/**
 * The slot arithmetic every store carries out atomically (the PostgreSQL store
 * in SQL, the same formula): the slot begins at the later of now and the next
 * free slot, and the next free slot moves one interval past it. A next free slot
 * absurdly far ahead is dropped.
 */
export function bookSlot(nextFree: number | undefined, now: number, intervalMs: number): Booking {
  const usable = nextFree !== undefined && Number.isFinite(nextFree) && nextFree <= now + MAX_AHEAD_MS ? nextFree : now;
  const at = Math.max(now, usable);
  return { at, nextFree: at + intervalMs };
}

/** A 429's Retry-After: no slot begins before now + holdMs (capped), whatever was booked. */
export function holdSlots(nextFree: number | undefined, now: number, holdMs: number): number {
  const until = now + Math.min(Math.max(0, holdMs), MAX_HOLD_MS);
  const usable = nextFree !== undefined && Number.isFinite(nextFree) && nextFree <= now + MAX_AHEAD_MS ? nextFree : now;
  return Math.max(usable, until);
}

/** The arithmetic a slot store applies atomically (backends/backend.ts SlotRules): this file's, handed to every store. */
export const SLOT_RULES: SlotRules = { book: bookSlot, hold: holdSlots, maxAheadMs: MAX_AHEAD_MS, maxHoldMs: MAX_HOLD_MS };

/** What the client is given: its key's budget. */
export interface RateBudget {
  /** Resolves when this request's slot has begun (the caller then sends at once). */
  acquire(): Promise<void>;
  /** A 429 said to wait `ms`: every sharer of the budget holds off that long. */
  holdOff(ms: number): Promise<void>;
}

/** The budget's state in one process's memory: for backends with no shared store, and as the fallback of a failing store. */
export class InProcessSlotStore implements SlotStore {
  private readonly next = new Map<string, number>();

  constructor(private readonly clock: Clock = systemClock) {}

  async book(budgetId: string, intervalMs: number): Promise<number> {
    const now = this.clock.now();
    const booking = bookSlot(this.next.get(budgetId), now, intervalMs);
    this.next.set(budgetId, booking.nextFree);
    return booking.at - now;
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    this.next.set(budgetId, holdSlots(this.next.get(budgetId), this.clock.now(), holdMs));
  }

  async close(): Promise<void> {}
}

export interface PacedBudgetOptions {
  /** What time it is and how to wait for a slot (default: the system's). */
  readonly clock?: Clock;
  /** Told (already free of secrets) when the shared store fails and this process paces alone for a while. */
  readonly log?: (line: string) => void;
}

/** How long a process paces alone after its shared store failed, before it asks the store again. */
const FALLBACK_MS = 30_000;

/**
 * A key's budget as one process sees it: bookings one at a time (each waits for
 * the previous slot to begin), in the shared store. A store that fails (a
 * database restart) does not fail requests: the process paces itself alone
 * for a while, which keeps it within the budget as long as it is the only one.
 */
export class PacedRateBudget implements RateBudget {
  private turn: Promise<void> = Promise.resolve();
  private readonly local: InProcessSlotStore;
  private sharedFailedAt: number | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly store: SlotStore,
    private readonly budgetId: string,
    readonly intervalMs: number,
    private readonly options: PacedBudgetOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.local = new InProcessSlotStore(this.clock);
  }

  acquire(): Promise<void> {
    const mine = this.turn.then(async () => {
      const wait = await this.book();
      if (wait > 0) await this.clock.sleep(wait);
    });
    this.turn = mine.catch(() => undefined);
    return mine;
  }

  private async book(): Promise<number> {
    if (this.sharedFailedAt !== undefined && this.clock.now() - this.sharedFailedAt < FALLBACK_MS) return this.local.book(this.budgetId, this.intervalMs);
    try {
      const wait = await this.store.book(this.budgetId, this.intervalMs);
      this.sharedFailedAt = undefined;
      return wait;
    } catch (error) {
      this.sharedFailedAt = this.clock.now();
      this.options.log?.(`[user-groups] rate budget store failed (${errorCode(error)}); pacing this process alone for ${FALLBACK_MS / 1000} s`);
      return this.local.book(this.budgetId, this.intervalMs);
    }
  }

  async holdOff(ms: number): Promise<void> {
    await this.local.hold(this.budgetId, ms);
    await this.store.hold(this.budgetId, ms).catch(() => undefined);
  }
}


/**
 * The budget's name in a store: derived from the base URL and the key with
 * scrypt (slow on purpose: the name is kept in a file or a table, and must not
 * let anyone who reads it test guesses of the key cheaply). The key itself is
 * never stored.
 */
export function budgetIdOf(baseUrl: string, apiKey: string): string {
  const salt = `pulumi-user-groups rate budget\u0000${normalizedBaseUrl(baseUrl)}`;
  return scryptSync(apiKey, salt, 24, { N: 1 << 14, r: 8, p: 1 }).toString("hex");
}

/** The base URL as the client uses it (origin + path, no trailing "/"), so that spellings of one service share a budget. */
function normalizedBaseUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  } catch {
    return baseUrl.replace(/\/+$/, "");
  }
}

export class InvalidRateLimitError extends UserGroupsError {
  constructor(variable: string, value: string) {
    super("invalid_rate_limit", `${variable} must be REQUESTS/SECONDS (e.g. 180/60) or "off", got ${JSON.stringify(value.slice(0, 40))}`);
    this.name = "InvalidRateLimitError";
  }
}

/** `180/60` (requests per seconds), or `off`; undefined means the default. */
export function parseRateLimit(variable: string, raw: string | undefined): RateLimit | "off" {
  if (raw === undefined || raw.trim() === "") return DEFAULT_RATE_LIMIT;
  const text = raw.trim();
  if (/^off$/i.test(text)) return "off";
  const match = /^(\d{1,7})\/(\d{1,6})$/.exec(text);
  const requests = Number(match?.[1]);
  const seconds = Number(match?.[2]);
  // A typo must not silently mean "no pacing" (or a pace of one request a day).
  if (!match || requests < 1 || seconds < 1 || seconds > 86_400) throw new InvalidRateLimitError(variable, raw);
  return { requests, windowMs: seconds * 1000 };
}
