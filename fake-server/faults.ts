// Fault injection: rules installed through `POST /__admin/faults` (or the
// in-process helpers) that make chosen requests fail in chosen ways.
import { z } from "zod";
import { type ApiMethod, API_METHODS } from "../provider/wire/schemas.js";

export const FAULT_ACTIONS = ["status", "delay", "reset", "drop-after-apply"] as const;

const ruleBase = {
  method: z.enum(API_METHODS),
  /** Matches the body's user_group_id, or for POST/DELETE the id of the group owning current_token. */
  user_group_id: z.string().optional(),
  /** Fires for the first `times` matches only. */
  times: z.number().int().positive().optional(),
  /** Fires on each match with this chance. */
  probability: z.number().min(0).max(1).optional(),
  /** Seeds the rule's own generator for `probability`, so that a failing run can be replayed. */
  seed: z.number().int().min(0).max(0xffff_ffff).optional(),
};

/** @internal */
export const faultRuleSchema = z.discriminatedUnion("action", [
  z.strictObject({
    ...ruleBase,
    action: z.literal("status"),
    status: z.number().int().min(200).max(599),
    retryAfter: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ ...ruleBase, action: z.literal("delay"), delayMs: z.number().int().nonnegative().max(600_000) }),
  z.strictObject({ ...ruleBase, action: z.literal("reset") }),
  z.strictObject({ ...ruleBase, action: z.literal("drop-after-apply") }),
]);
/** What every fault rule matches on and how often it fires. */
export interface FaultRuleBase {
  method: ApiMethod;
  /** Matches the body's user_group_id, or for POST/DELETE the id of the group owning current_token. */
  user_group_id?: string | undefined;
  /** Fires for the first `times` matches only. */
  times?: number | undefined;
  /** Fires on each match with this chance (0 to 1). */
  probability?: number | undefined;
  /** Seeds the rule's own generator for `probability`, so that a failing run can be replayed. */
  seed?: number | undefined;
}
/** A fault rule: answer a status, wait first, reset the connection, or apply and then drop the answer. */
export type FaultRule = StatusFaultRule | DelayFaultRule | ResetFaultRule | DropAfterApplyFaultRule;
/** Answers with `status` (and a Retry-After of `retryAfter` seconds) instead of handling the request. */
export interface StatusFaultRule extends FaultRuleBase {
  action: "status";
  status: number;
  retryAfter?: number | undefined;
}
/** Waits `delayMs` (at most 10 minutes), then handles the request. */
export interface DelayFaultRule extends FaultRuleBase {
  action: "delay";
  delayMs: number;
}
/** Resets the connection before handling the request. */
export interface ResetFaultRule extends FaultRuleBase {
  action: "reset";
}
/** Carries the request out, then destroys the socket without answering: the lost-response case. */
export interface DropAfterApplyFaultRule extends FaultRuleBase {
  action: "drop-after-apply";
}
/** A rule as given to the server (no field has a default, so the same as FaultRule). */
export type FaultRuleInput = FaultRule;

/** @internal */
export const faultRulesBodySchema = z.strictObject({ rules: z.array(faultRuleSchema) });

/** A rule plus how many more times it may fire (undefined = unlimited) and its chance generator. */
export interface ActiveRule {
  rule: FaultRule;
  remaining: number | undefined;
  random: () => number;
}

/**
 * mulberry32: a small, fast 32-bit generator, uniform in [0, 1). Not for secrets;
 * here only so that a seeded rule draws the same chances in the same order.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface FaultMatch {
  method: string;
  /** The id the request is about, when it can be told (see ruleBase.user_group_id). */
  userGroupId: string | undefined;
}

export class FaultTable {
  private rules: ActiveRule[] = [];

  /** `random` serves the rules that have no `seed`. */
  constructor(private readonly random: () => number = Math.random) {}

  add(rules: readonly FaultRule[]): void {
    for (const rule of rules) {
      this.rules.push({ rule, remaining: rule.times, random: rule.seed === undefined ? this.random : seededRandom(rule.seed) });
    }
  }

  clear(): void {
    this.rules = [];
  }

  list(): Array<FaultRule & { remaining?: number }> {
    return this.rules.map((r) => (r.remaining === undefined ? { ...r.rule } : { ...r.rule, remaining: r.remaining }));
  }

  get empty(): boolean {
    return this.rules.length === 0;
  }

  /**
   * The first rule, in the order installed, that matches and fires; a rule that
   * fires uses up one of its `times`. With both `times` and `probability`, each
   * match fires with that chance, at most `times` times.
   */
  pick(request: FaultMatch): FaultRule | undefined {
    for (const active of this.rules) {
      const { rule } = active;
      if (rule.method !== request.method) continue;
      if (rule.user_group_id !== undefined && rule.user_group_id !== request.userGroupId) continue;
      if (active.remaining === 0) continue;
      if (rule.probability !== undefined && !(active.random() < rule.probability)) continue;
      if (active.remaining !== undefined) active.remaining -= 1;
      return rule;
    }
    return undefined;
  }
}
