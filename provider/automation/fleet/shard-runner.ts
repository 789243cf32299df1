// The fleet's seam to the engine: what a batch asks of one shard's stack. The
// groups its state holds (read without an engine run, checked as data), and one
// targeted run of some of its groups through the one shard pipeline
// (shards/run-shard.ts runShard: lock wait, run lease, takeover, the
// directory's rule, change tracking). engineShardRunner is the real one,
// UserGroupFleet's default; a test hands the fleet another, so that batching,
// per-caller isolation and the answers run without an engine
// (test/automation/fleet/*.unit.test.ts).
import type { Stack } from "@pulumi/pulumi/automation";
import { checkedState, declareGroup, engineRun, exportState, noteResolved, readStateWithSecrets, runOnly } from "../engine";
import { runShard, type ShardRunContext } from "../shards";
import { type GroupChange, type GroupSpec, heldGroupNames, type RunOptions } from "../model";
import type { RunFailure } from "./fleet-isolation";
import { type FleetGroup, groupsInState } from "./fleet-state";
import { FLEET_MARKER_OUTPUT } from "./fleet-stack";
import type { FleetShards } from "./fleet-shards";
import { type GroupOutputs, type Request, urnOfGroup } from "./requests";

/** What one targeted run of a shard did, as the engine reported it. */
export interface TargetedRunOutcome {
  /** Each group's change (a ChangeTracker's). */
  readonly changes: ReadonlyMap<string, GroupChange>;
  /** Each group's own diagnostic (its step failed). */
  readonly diagnostics: ReadonlyMap<string, string>;
  /** What an ensure's program saw of each group once the engine answered. */
  readonly outputs: ReadonlyMap<string, GroupOutputs>;
  /** Groups not run: an ensure's, claimed by another shard meanwhile (that shard); a remove's, deleted by another replica meanwhile (undefined). */
  readonly skipped: ReadonlyMap<string, number | undefined>;
  /** Set when the engine failed the run: the groups it did not settle may be fine on their own. */
  readonly failure?: RunFailure;
}

/** The fleet's way to one shard's stack. */
export interface ShardRunner {
  /** The groups shard `shard`'s state holds now, checked as data. */
  held(shards: FleetShards, shard: number): Promise<FleetGroup[]>;
  /** One targeted run of these groups of the shard: an up of an ensure's, a destroy of a remove's. Our own errors (lock, lease, a step outside them) are thrown. */
  run(shards: FleetShards, shard: number, kind: Request["kind"], specs: ReadonlyMap<string, GroupSpec>): Promise<TargetedRunOutcome>;
  /** The groups the root stack holds, for a shard directory made now (undefined: none); default, read from its state. */
  readonly rootHeld?: () => Promise<readonly string[] | undefined>;
}

/** The real shard runner: the shard's state through `pulumi stack export`, its runs through runShard and the engine. */
export function engineShardRunner(options: RunOptions, lockTimeoutMs: number): ShardRunner {
  return {
    held: async (shards, shard) => groupsInState(checkedState(await readStateWithSecrets((await shards.selected(shard)).stack), shards.stackNameOf(shard))),
    run: (shards, shard, kind, specs) => runTargeted(options, lockTimeoutMs, shards, shard, kind, specs),
  };
}

async function runTargeted(
  options: RunOptions,
  lockTimeoutMs: number,
  shards: FleetShards,
  shard: number,
  kind: Request["kind"],
  specs: ReadonlyMap<string, GroupSpec>,
): Promise<TargetedRunOutcome> {
  const stackName = shards.stackNameOf(shard);
  const outputs = new Map<string, GroupOutputs>();
  let skipped = new Map<string, number | undefined>();
  const outcome = await runShard(
    { shard, options: { ...options, stack: stackName, lockTimeoutMs }, directory: (await shards.sharded()).directory },
    {
      operation: kind === "ensure" ? "up" : "destroy",
      targets: [...specs.keys()],
      open: () => shards.open(shard),
      outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
      engine: async (run) => {
        outputs.clear();
        skipped = kind === "ensure" ? new Map(run.moved) : await goneMeanwhile(run.stack, specs);
        const targeted = new Map([...specs].filter(([name]) => !skipped.has(name)));
        if (targeted.size === 0) return;
        const common = targetedRun(options, stackName, targeted, run);
        if (kind === "ensure") await engineRun("up", stackName, () => runOnly(run.stack).up({ program: programOf(targeted, outputs), ...common }), shard);
        else await engineRun("destroy", stackName, () => runOnly(run.stack).destroy(common), shard);
      },
    },
  );
  const { changes, diagnostics } = outcome.tracker;
  return { changes, diagnostics, outputs, skipped, ...(outcome.failure ? { failure: outcome.failure } : {}) };
}

/** A remove's groups another replica deleted since the state was read, read again under the lease: gone already ("same"), not targets the engine cannot find. */
async function goneMeanwhile(stack: Stack, specs: ReadonlyMap<string, GroupSpec>): Promise<Map<string, undefined>> {
  // Names only: heldGroupNames reads URNs, which an export without secrets shows as they are.
  const stillHeld = new Set(heldGroupNames(await exportState(stack)));
  return new Map([...specs.keys()].filter((name) => !stillHeld.has(name)).map((name) => [name, undefined]));
}

/** The program of an ensure's run: one group per spec, each group's outputs noted as the engine answers. */
function programOf(specs: ReadonlyMap<string, GroupSpec>, outputs: Map<string, GroupOutputs>) {
  return async () => {
    for (const [resourceName, spec] of specs) noteResolved(resourceName, declareGroup(spec), outputs);
    return { [FLEET_MARKER_OUTPUT]: true };
  };
}

/** The options of an up or destroy of exactly these groups, each group's failure its own; a step outside them stops the run. */
function targetedRun(options: RunOptions, stackName: string, groups: ReadonlyMap<string, GroupSpec>, run: Pick<ShardRunContext, "tracker" | "signal">) {
  return {
    target: [...groups.keys()].map((name) => urnOfGroup(stackName, name)),
    continueOnError: true,
    onEvent: run.tracker.handle,
    // Stopped by a step outside the batch, or by losing the run lease.
    signal: run.signal ? AbortSignal.any([run.tracker.signal, run.signal]) : run.tracker.signal,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
  };
}
