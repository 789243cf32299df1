// How many shards a whole-set run takes at once: the machine's cores (at most 4), or
// USER_GROUPS_SHARD_CONCURRENCY (the profile's knob, bench/shard-profile.ts) when it is
// a whole number from 1 to 16; anything else is ignored.
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { SHARD_CONCURRENCY_ENV, shardConcurrency } from "../../../provider/automation/shards/sharded-stack";

describe("shardConcurrency", () => {
  const cores = Math.max(1, Math.min(4, availableParallelism()));

  it("runs as many shards at once as the machine has cores, at most 4", () => {
    expect(shardConcurrency({})).toBe(cores);
  });

  it("takes a whole number from 1 to 16 from USER_GROUPS_SHARD_CONCURRENCY", () => {
    expect(shardConcurrency({ [SHARD_CONCURRENCY_ENV]: "1" })).toBe(1);
    expect(shardConcurrency({ [SHARD_CONCURRENCY_ENV]: "16" })).toBe(16);
  });

  it("ignores any other value: zero, too many, a fraction, a sign, trailing text, a huge number", () => {
    for (const value of ["0", "17", "1.5", "-2", "+3", "3 ", "3abc", "9".repeat(400), ""]) {
      expect(shardConcurrency({ [SHARD_CONCURRENCY_ENV]: value })).toBe(cores);
    }
  });
});
