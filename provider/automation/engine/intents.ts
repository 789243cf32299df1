// Whole-set runs without Pulumi's checkpoint after every step (issue #44 item 3;
// docs/performance.md, "A profile of one shard run"). On a file backend a shard of
// S groups costs S² resource writes with a checkpoint per step, about 80 % of the
// engine's CPU in an up or a destroy. With PULUMI_SKIP_CHECKPOINTS=true the engine
// writes the state once, at the end; a run killed before then leaves the state as
// it was before the run. What that would lose is written to the run record first:
//
// - a destroy (or any run whose only changes are deletes) records the groups it
//   is about to delete (`removing`). Killed, its state still holds groups the
//   service may no longer have; the next holder's takeover reads exactly those
//   back (a targeted refresh: a 404 drops a group from the state), so a later up
//   re-creates what was deleted and a later destroy finds nothing twice (a delete
//   of a missing group succeeds: logic/operations.ts deleteUserGroup).
// - an up of new groups only (the state holds no group and nothing pending)
//   records each group it is about to create (`intents`), with the lease's epoch
//   and the same HMAC proof as a fleet's `created` entry (lease/created-proof.ts).
//   Killed, the groups it created are on the service and in no state; the next
//   holder's takeover asks the service for each proven intent the state does not
//   hold: one that exists becomes a `created` entry, which the takeover adopts
//   as it adopts a fleet's (its token read into the state, once); the rest are
//   dropped (never created: the run that meant to is dead). Only a group with the
//   intent's name and properties is adopted; one that someone else made with this
//   very id, name and properties before the run cannot be told apart (as for a
//   pending create a killed run left).
//
// A run that rotates a token, updates or replaces a group (something only the
// state would remember) keeps its checkpoints. The record's intents are cleared
// once the engine has ended (its final write made); a run that failed keeps them
// for the next holder, who drops those its state holds.
import { isDeepStrictEqual } from "node:util";
import type { Deployment, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { UserGroupsClient } from "../../client/http-client";
import { type ConfigLookup, CONFIG_NAMESPACE, resolveCredentials } from "../../logic/credentials";
import { readCurrentGroup } from "../../logic/operations";
import { serviceClientOf } from "../../logic/service-client";
import { USER_GROUP_TYPE } from "../../resource/user-group";
import { type GroupSpec, heldGroupNames, type Operation, resourceNameOf, type RunOptions, urnOf } from "../model";
import { checkCreatedEntries, type CreatedEntry, provenEntry, type RunLease, UnprovenRecordEntryError } from "../lease";
import { runOnly } from "./pulumi-cli";
import { createdEntryOf } from "./created-entries";
import { engineRun } from "./run-telemetry";
import { PROJECT_NAME } from "./workspace";

/** Pulumi's switch: no checkpoint per step, one state write at the end of the run. */
export const SKIP_CHECKPOINTS_ENV = "PULUMI_SKIP_CHECKPOINTS";
/** Reads of the service a takeover sends at once while it settles intents. */
const SETTLE_CONCURRENCY = 16;

/** What a checkpoint-free run writes to the record before the engine starts. */
export interface CheckpointFreePlan {
  readonly creating: readonly GroupSpec[];
  readonly removing: readonly string[];
}

/**
 * Whether this whole-set run may go without a checkpoint per step, and what it
 * records first: a destroy (its deletes), an up of new groups only (the state
 * holds no group and no pending operation). Undefined: checkpoints as always.
 */
export function checkpointFreePlan(operation: Operation, state: Deployment, specs: readonly GroupSpec[]): CheckpointFreePlan | undefined {
  const deployment = state.deployment as { pending_operations?: unknown[] } | undefined;
  if ((deployment?.pending_operations ?? []).length > 0) return undefined;
  const held = heldGroupNames(state);
  if (operation === "destroy") return held.length > 0 ? { creating: [], removing: held } : undefined;
  if (operation === "up" && held.length === 0 && specs.length > 0) return { creating: specs, removing: [] };
  return undefined;
}

/** A group to be created, as the record holds it (as a fleet's sign-up: createdEntryOf), with the lease's epoch. */
export function intentOf(spec: GroupSpec, epoch: number | undefined): CreatedEntry {
  return createdEntryOf(resourceNameOf(spec), spec, epoch);
}

/**
 * Runs `body` (the engine's up or destroy) without a checkpoint per step when
 * `plan` allows it and the record can hold its intents: the intents written
 * (proven with `proofKey`; an up without a key keeps its checkpoints), the
 * engine's environment given PULUMI_SKIP_CHECKPOINTS=true for this run only,
 * and the intents cleared once the engine has ended well.
 */
export async function withCheckpointsWhereNeeded<T>(
  place: { readonly stack: Stack; readonly lease: RunLease | undefined; readonly proofKey: () => Promise<Buffer | undefined> },
  plan: CheckpointFreePlan | undefined,
  body: () => Promise<T>,
): Promise<T> {
  const { lease, stack } = place;
  if (plan === undefined || lease === undefined) return body();
  let intents: CreatedEntry[] = [];
  if (plan.creating.length > 0) {
    const key = await place.proofKey();
    if (key === undefined) return body();
    intents = plan.creating.map((spec) => provenEntry(key, intentOf(spec, lease.epoch)));
  }
  await lease.update({ intents, removing: [...plan.removing] });
  if (lease.lost) throw lease.signal.reason;
  const env = (stack.workspace as LocalWorkspace).envVars;
  const saved = env[SKIP_CHECKPOINTS_ENV];
  env[SKIP_CHECKPOINTS_ENV] = "true";
  try {
    const value = await body();
    await lease.update({ intents: [], removing: [] });
    return value;
  } finally {
    if (saved === undefined) delete env[SKIP_CHECKPOINTS_ENV];
    else env[SKIP_CHECKPOINTS_ENV] = saved;
  }
}

/** Whether the record holds intents a takeover must settle. */
export function hasIntents(record: { readonly intents?: readonly unknown[]; readonly removing?: readonly unknown[] }): boolean {
  return (record.intents ?? []).length > 0 || (record.removing ?? []).length > 0;
}

/** What settling needs besides the lease: the stack, and the run's options (the service's credentials, as the provider reads them). */
export interface IntentSettling {
  readonly lease: RunLease;
  readonly stack: Stack;
  readonly stackName: string;
  /** The run's options; undefined: a caller that cannot ask the service (the intents stay for the next holder). */
  readonly intents?: RunOptions;
  readonly onOutput?: (text: string) => void;
  readonly parallel?: number;
}

/**
 * Settles what a dead checkpoint-free run left in the record (see the file
 * header), under the lease, before the takeover adopts the record's `created`
 * entries: the groups it was deleting are read back (targeted refresh), each
 * proven intent the state does not hold and the service does becomes a
 * `created` entry, and the intents leave the record.
 */
export async function settleIntents(settling: IntentSettling, state: Deployment, proofKey: Buffer | undefined): Promise<void> {
  const { lease, stack, stackName, intents: runOptions } = settling;
  if (!hasIntents(lease.current) || runOptions === undefined) return;
  const held = new Set(heldGroupNames(state));
  const common = {
    ...(settling.onOutput ? { onOutput: settling.onOutput } : {}),
    ...(settling.parallel !== undefined ? { parallel: settling.parallel } : {}),
    signal: lease.signal,
  };
  const removing = (lease.current.removing ?? []).filter((name) => held.has(name));
  if (removing.length > 0) {
    const target = removing.map((name) => urnOf(stackName, PROJECT_NAME, USER_GROUP_TYPE, name));
    await engineRun("refresh", stackName, () => runOnly(stack).refresh({ target, ...common }));
  }
  const { proven, refused } = checkCreatedEntries(proofKey, lease.current.intents ?? []);
  for (const { entry, why } of refused) {
    const error = new UnprovenRecordEntryError(stackName, entry.resourceName, why);
    settling.onOutput?.(`[${error.code}] ${error.message}\n`);
  }
  const existing = await onTheService(runOptions, proven.filter((entry) => !held.has(entry.resourceName)));
  await lease.updateWith((record) => {
    const known = new Set((record.created ?? []).map((entry) => entry.resourceName));
    return { created: [...(record.created ?? []), ...existing.filter((entry) => !known.has(entry.resourceName))], intents: [], removing: [] };
  });
  if (lease.lost) throw lease.signal.reason;
}

/** What the provider would read from the stack's config, as the run's options set it (also the fleet's sign-up clients). */
export function runConfigLookup(options: RunOptions): ConfigLookup {
  return (key) => {
    const value = options.config?.[key]?.value;
    if (value === undefined || key !== `${CONFIG_NAMESPACE}:profiles`) return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return undefined;
    }
  };
}

/** The entries whose group the service holds (a no-op PUT each, as a refresh reads a group), SETTLE_CONCURRENCY at once. */
async function onTheService(options: RunOptions, entries: readonly CreatedEntry[]): Promise<CreatedEntry[]> {
  if (entries.length === 0) return [];
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.envVars };
  const clients = new Map<string, UserGroupsClient>();
  const clientFor = (profile: string | undefined) => {
    const key = profile ?? "\u0000";
    let client = clients.get(key);
    if (client === undefined) {
      client = serviceClientOf(UserGroupsClient, resolveCredentials(profile, runConfigLookup(options), env), env).client;
      clients.set(key, client);
    }
    return client;
  };
  const found: CreatedEntry[] = [];
  let next = 0;
  try {
    const worker = async () => {
      while (next < entries.length) {
        const entry = entries[next++]!;
        const { name, userGroupId, profile, properties } = entry.inputs as { name?: unknown; userGroupId?: unknown; profile?: unknown; properties?: unknown };
        if (typeof name !== "string" || typeof userGroupId !== "string") continue;
        const group = await readCurrentGroup(clientFor(typeof profile === "string" ? profile : undefined), name, userGroupId);
        // Only a group as this run would have made it (its name and properties): the dead run may never have sent its create.
        if (group !== undefined && group.name === name && isDeepStrictEqual(group.properties ?? null, properties ?? null)) found.push(entry);
      }
    };
    await Promise.all(Array.from({ length: Math.min(SETTLE_CONCURRENCY, entries.length) }, worker));
  } finally {
    for (const client of clients.values()) await client.close().catch(() => undefined);
  }
  return found;
}
