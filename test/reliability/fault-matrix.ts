// The fault matrix: a real Pulumi engine (Automation API) against one fake
// server per test file whose fault rules make requests fail in the ways a real
// network and service do. Each case runs create -> update + rotation ->
// refresh -> preview -> destroy with the faults on throughout, and checks after
// each step that the server holds exactly the declared groups with the tokens
// the stack reports. Last, no token and no API key may appear in anything the
// runs left behind (state files, engine output with the provider's debug lines,
// the server's log and journal). Split over two files so that they run in parallel.
// Change counts come from each run's summary event and outputs from the state
// (test/support/run-results.ts), not from three CLI processes after each run.
// Probabilistic rules are seeded: each file prints its FAULT_SEED; run it again with
// FAULT_SEED=<n> to replay the same chances.
import { describe, expect, it } from "vitest";
import type { FaultRuleInput } from "../../fake-server";
import { runOnly } from "../../provider/automation/engine/pulumi-cli";
import { API_METHODS } from "../../provider/wire/schemas";
import { destroyChanges, upChanges } from "../support/run-results";
import {
  API_KEYS,
  createGroupStack,
  CUSTOMER_KEY,
  expectConverged,
  expectNoSecrets,
  FAST_RETRIES,
  groupsOf,
  placesToScan,
  type ReliabilityServer,
  useReliabilityServer,
} from "./support";

export interface FaultCase {
  readonly name: string;
  readonly rules: FaultRuleInput[];
  /** Methods on which a fault must have fired, so that the case proves something. */
  readonly firedOn: readonly string[];
  readonly env?: Record<string, string>;
}

/** A fault rule without its method (distributed over the rule kinds). */
type RuleWithoutMethod = FaultRuleInput extends infer R ? (R extends unknown ? Omit<R, "method"> : never) : never;

export const everyMethod = (rule: RuleWithoutMethod): FaultRuleInput[] =>
  API_METHODS.map((method) => ({ ...rule, method }) as FaultRuleInput);

/**
 * The seed of this file's probabilistic rules: FAULT_SEED from the environment to
 * replay a run, else a fresh one. Printed so that a failure can be replayed.
 */
export function faultSeed(label: string): number {
  const given = process.env["FAULT_SEED"];
  if (given !== undefined && !/^\d{1,10}$/.test(given)) throw new Error("FAULT_SEED must be an integer 0..4294967295");
  const seed = given === undefined ? Math.floor(Math.random() * 0x1_0000_0000) : Number(given);
  if (seed > 0xffff_ffff) throw new Error("FAULT_SEED must be an integer 0..4294967295");
  console.log(`fault matrix ${label}: FAULT_SEED=${seed}${given === undefined ? "" : " (from the environment)"}`);
  return seed;
}

/**
 * Each rule with a probability gets its own seed, derived from the file's, the case's and the rule's place. A chance
 * rule must be capped (`times` at most 5: with a case's one certain firing, 6 failed attempts of a request's 8), so
 * that no seed can fail a run with nothing wrong in the client: the seed is fresh each run.
 */
function seeded(rules: readonly FaultRuleInput[], fileSeed: number, caseIndex: number): FaultRuleInput[] {
  for (const rule of rules) {
    if (rule.probability !== undefined && (rule.times === undefined || rule.times > 5)) {
      throw new Error(`fault matrix: a chance rule (${rule.action} on ${rule.method}) fires at most 5 times (times: ${rule.times ?? "unset"})`);
    }
  }
  return rules.map((rule, ruleIndex) =>
    rule.probability === undefined ? rule : { ...rule, seed: (fileSeed + caseIndex * 1_000 + ruleIndex) % 0x1_0000_0000 },
  );
}

export function runFaultMatrix(label: string, cases: readonly FaultCase[]): void {
  const GROUPS = 5;
  const seed = faultSeed(label);
  let rs: ReliabilityServer;
  const stacks = useReliabilityServer((started) => (rs = started));

  describe("fault matrix through the Automation API", () => {
    for (const [index, fc] of cases.entries()) {
      it(`converges under ${fc.name}`, async () => {
        await rs.server.reset();
        const gs = await createGroupStack(`${label}-${index}`, rs.server.url, CUSTOMER_KEY, { ...FAST_RETRIES, ...fc.env });
        stacks.push(gs);
        rs.server.setFaults(seeded(fc.rules, seed, index));

        gs.declared = groupsOf(GROUPS, `${label}${index}`);
        const up = await upChanges(gs.stack, gs.run);
        expect(up.summary.resourceChanges).toEqual({ create: GROUPS + 1 });
        await expectConverged(rs.server, gs);
        const created = new Map(rs.server.groups().map((g) => [g.user_group_id, g.token]));

        // Rename and rotate every group in one run: a PUT and a POST each.
        gs.declared = groupsOf(GROUPS, `${label}${index}`, { rotationTrigger: "2026-12" });
        for (const [id, args] of gs.declared) gs.declared.set(id, { ...args, name: `${String(args.name)} (renamed)` });
        const up2 = await upChanges(gs.stack, gs.run);
        expect(up2.summary.resourceChanges).toEqual({ update: GROUPS, same: 1 });
        await expectConverged(rs.server, gs);
        for (const g of rs.server.groups()) expect(g.token).not.toBe(created.get(g.user_group_id));

        await runOnly(gs.stack).refresh({ expectNoChanges: true, ...gs.run });
        await gs.stack.preview({ expectNoChanges: true, ...gs.run });
        await expectConverged(rs.server, gs);

        const destroy = await destroyChanges(gs.stack, gs.run);
        expect(destroy.summary.resourceChanges).toEqual({ delete: GROUPS + 1 });
        expect(rs.server.groups()).toEqual([]);

        const fired = rs.server.journal().filter((e) => e.fault !== undefined);
        expect(fired.length).toBeGreaterThan(0);
        for (const method of fc.firedOn) expect(fired.filter((e) => e.method === method).length, `${method} faults`).toBeGreaterThan(0);
        rs.server.clearFaults();
      });
    }

    it("leaves no token and no API key in the state, the engine output, the debug logs or the server's log and journal", () => {
      rs.sample();
      const places = placesToScan(rs, stacks);
      // The debug lines were really captured (else this scan would prove nothing about them).
      expect(stacks.every((gs) => gs.output.join("").includes("[user-groups]"))).toBe(true);
      expect(rs.tokens.size).toBeGreaterThanOrEqual(cases.length * GROUPS * 2);
      expectNoSecrets(places, [...rs.tokens, ...API_KEYS]);
    });
  });
}
