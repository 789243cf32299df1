// Shards kept in memory for the fleet's unit tests (fleet-batcher.unit.test.ts,
// fleet-sign-ups.unit.test.ts): the fleet's seam to the engine
// (fleet/shard-runner.ts), each targeted run doing what the engine would.
import type { GroupChange, GroupSpec } from "../../../provider/automation/model";
import type { FleetGroup } from "../../../provider/automation/fleet/fleet-state";
import type { FleetShards } from "../../../provider/automation/fleet/fleet-shards";
import type { GroupOutputs } from "../../../provider/automation/fleet/requests";
import type { ShardRunner, TargetedRunOutcome } from "../../../provider/automation/fleet/shard-runner";

export interface RunSeen {
  readonly shard: number;
  readonly kind: "ensure" | "remove";
  readonly names: readonly string[];
}

/** Shards kept in memory: each targeted run does what the engine would, unless the test said otherwise for a group. */
export class MemoryShards implements ShardRunner {
  readonly states = new Map<number, Map<string, FleetGroup>>();
  readonly runs: RunSeen[] = [];
  /** Groups a concurrent run moves to the next shard, and how many more times it does. */
  readonly moving = new Map<string, number>();
  /** Groups whose step the provider refuses (their input), each with its own diagnostic. */
  readonly refused = new Set<string>();
  /** Groups whose presence fails the whole run, for a reason charged to no group. */
  readonly poisonous = new Set<string>();
  /** Awaited at the start of each run (a run under way while more calls come in). */
  gate: Promise<void> | undefined;
  /** Told as each run starts. */
  onRun: ((run: RunSeen) => void) | undefined;

  readonly rootHeld = async (): Promise<undefined> => undefined; // no root stack: a directory made now

  async held(_shards: FleetShards, shard: number): Promise<FleetGroup[]> {
    return [...(this.states.get(shard)?.values() ?? [])];
  }

  async run(shards: FleetShards, shard: number, kind: "ensure" | "remove", specs: ReadonlyMap<string, GroupSpec>): Promise<TargetedRunOutcome> {
    const seen = { shard, kind, names: [...specs.keys()] };
    this.runs.push(seen);
    this.onRun?.(seen);
    await this.gate;
    const state = this.states.get(shard) ?? new Map<string, FleetGroup>();
    this.states.set(shard, state);
    const changes = new Map<string, GroupChange>();
    const diagnostics = new Map<string, string>();
    const outputs = new Map<string, GroupOutputs>();
    const skipped = new Map<string, number | undefined>();
    const poisoned = seen.names.filter((name) => this.poisonous.has(name));
    if (poisoned.length > 0) {
      const lines = [`error: the program failed (it ran ${seen.names.join(", ")})`];
      return { changes, diagnostics, outputs, skipped, failure: { error: new Error(lines[0]), lines } };
    }
    for (const [name, spec] of specs) {
      const moves = this.moving.get(name) ?? 0;
      if (kind === "ensure" && moves > 0) {
        // Another replica's run claimed it for the next shard meanwhile: the directory says so now.
        this.moving.set(name, moves - 1);
        await (await shards.sharded()).directory.repair(new Map([[name, shard + 1]]));
        skipped.set(name, shard + 1);
      } else if (kind === "ensure" && this.refused.has(name)) {
        changes.set(name, "failed");
        diagnostics.set(name, `name "${spec.name}" refused by the service (in a run with ${seen.names.join(", ")})`);
      } else if (kind === "ensure") {
        const group: FleetGroup = { resourceName: name, userGroupId: spec.userGroupId, name: spec.name, mapping: spec.mapping ?? {}, token: `token-of-${spec.userGroupId}`, teamId: 7 };
        changes.set(name, state.has(name) ? "update" : "create");
        state.set(name, group);
        outputs.set(name, { name: group.name, token: group.token, teamId: group.teamId });
      } else {
        changes.set(name, state.delete(name) ? "delete" : "same");
      }
    }
    return { changes, diagnostics, outputs, skipped };
  }
}

