// Drift: what changed on the service behind the state's back (and, given the
// groups file, what `up` would change), found with Pulumi's `preview --refresh`:
// the refresh happens in memory only, so the state is left byte for byte as it
// was, and the provider's reads change nothing on the service (R5).
//
// The program is built from the state itself, every input ignored for changes:
// each group that still exists is then a "same" step, whose outputs (the
// refreshed name, properties and token) reach the program; a group deleted out
// of band is a "create". The token is compared in this process and never leaves it.
import * as pulumi from "@pulumi/pulumi";
import { isDeepStrictEqual } from "node:util";
import { USER_GROUP_TYPE, UserGroup, type UserGroupArgs } from "../../resource/user-group";
import { type FieldChange, type GroupSpec, validateGroups, nameOfUrn, resourceNameOf, type RunOptions } from "../model";
import { openShards, eachLimited, shardConcurrency } from "../shards";
import { openStack, StackNotFoundError, withLockWait, assertOwnProviderCode, ChangeTracker, runFailure, engineRun, readStateWithSecrets } from "../engine";
import { inSpan, setSpanAttributes } from "../telemetry";
import { withoutCredentials } from "../backend";

export type DriftKind =
  | "deleted" // in the state, gone from the service
  | "renamed" // the service's name differs from the state's
  | "properties changed"
  | "token rotated" // rotated out of band: the state's token no longer works
  | "not created" // in the file, not in the state: up would create it
  | "not in file" // in the state, not in the file: up would delete it
  | "differs from file"; // up would update it

export interface GroupDrift {
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly profile?: string;
  readonly kind: DriftKind;
  /** What differs, for a person; never a token. */
  readonly detail: string;
  /** Each differing input: old is the state's (or the service's, for the file), new the service's (or the file's). */
  readonly fieldChanges?: readonly FieldChange[];
}

export interface DriftReport {
  readonly stack: string;
  /** Without credentials. */
  readonly backendUrl: string;
  /** Groups the state holds (each one read from the service). */
  readonly checked: number;
  readonly inSync: boolean;
  /** One entry per drift found, sorted by group. */
  readonly drift: readonly GroupDrift[];
}

/** A group as the state records it. */
export interface StateGroup {
  readonly resourceName: string;
  readonly inputs: GroupSpec;
  readonly name: string;
  readonly properties: unknown;
  /** Undefined when the export did not carry it in plain text. */
  readonly token?: string;
}

/** A group as the service holds it now. */
export interface ServiceGroup {
  readonly name: string;
  readonly properties: unknown;
  readonly token?: string;
}

const sameJson = (a: unknown, b: unknown) => isDeepStrictEqual(a ?? null, b ?? null);
const quoted = (text: string) => JSON.stringify(text);

function entry(resourceName: string, spec: Pick<GroupSpec, "userGroupId" | "profile">, kind: DriftKind, detail: string, changes?: FieldChange[]): GroupDrift {
  return { resourceName, userGroupId: spec.userGroupId, ...(spec.profile !== undefined ? { profile: spec.profile } : {}), kind, detail, ...(changes ? { fieldChanges: changes } : {}) };
}

/**
 * Compares the state with the service (undefined: gone) and, with a file,
 * the file with both. Pure: the reads have happened already.
 */
export function compareDrift(
  state: readonly StateGroup[],
  service: ReadonlyMap<string, ServiceGroup | undefined>,
  file?: readonly GroupSpec[],
): GroupDrift[] {
  const drift: GroupDrift[] = [];
  const byName = new Map(state.map((g) => [g.resourceName, g]));
  for (const group of state) {
    if (!service.has(group.resourceName)) continue; // not read (should not happen): say nothing rather than guess
    const now = service.get(group.resourceName);
    const add = (kind: DriftKind, detail: string, changes?: FieldChange[]) => drift.push(entry(group.resourceName, group.inputs, kind, detail, changes));
    if (now === undefined) {
      add("deleted", "deleted on the service; up would create it again (new token and team id)");
      continue;
    }
    if (now.name !== group.name) add("renamed", `name ${quoted(group.name)} in the state, ${quoted(now.name)} on the service`, [{ field: "name", old: group.name, new: now.name }]);
    if (!sameJson(now.properties, group.properties)) add("properties changed", "properties on the service differ from the state", [{ field: "properties", old: group.properties, new: now.properties }]);
    if (now.token !== undefined && group.token !== undefined && now.token !== group.token) {
      add("token rotated", "the token was rotated out of band; the state's token no longer works");
    }
  }
  if (file !== undefined) {
    const declared = new Set<string>();
    for (const spec of file) {
      const resourceName = resourceNameOf(spec);
      declared.add(resourceName);
      const recorded = byName.get(resourceName);
      if (recorded === undefined) {
        drift.push(entry(resourceName, spec, "not created", "declared in the file, not in the state; up would create it"));
        continue;
      }
      const now = service.get(resourceName);
      const differences: FieldChange[] = [];
      const differ = (field: string, old: unknown, now: unknown) => differences.push({ field, ...(old !== undefined ? { old } : {}), ...(now !== undefined ? { new: now } : {}) });
      if (spec.name !== (now?.name ?? recorded.name)) differ("name", now?.name ?? recorded.name, spec.name);
      if (!isDeepStrictEqual(spec.mapping ?? {}, recorded.inputs.mapping ?? {})) differ("mapping", recorded.inputs.mapping, spec.mapping);
      if (!sameJson(spec.properties, now?.properties ?? recorded.properties)) differ("properties", now?.properties ?? recorded.properties, spec.properties);
      if ((spec.rotationTrigger ?? null) !== (recorded.inputs.rotationTrigger ?? null)) differ("rotationTrigger", recorded.inputs.rotationTrigger, spec.rotationTrigger);
      if (differences.length > 0) drift.push(entry(resourceName, spec, "differs from file", `up would change ${differences.map((d) => d.field).join(", ")}`, differences));
    }
    for (const group of state) {
      if (!declared.has(group.resourceName)) drift.push(entry(group.resourceName, group.inputs, "not in file", "in the state, not in the file; up would delete it"));
    }
  }
  return drift.sort((a, b) => (a.resourceName === b.resourceName ? 0 : a.resourceName < b.resourceName ? -1 : 1));
}

interface ExportedResource {
  urn?: string;
  type?: string;
  delete?: boolean;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

/** A secret as readStateWithSecrets gives it (decrypted in this process): `{ <sig>: ..., plaintext: "<JSON>" }`. */
function plainSecret(value: unknown): unknown {
  if (typeof value === "object" && value !== null && typeof (value as { plaintext?: unknown }).plaintext === "string") {
    return JSON.parse((value as { plaintext: string }).plaintext) as unknown;
  }
  return value;
}

/** The groups of an exported deployment (resources being replaced or deleted left out). */
export function stateGroupsOf(deployment: unknown): StateGroup[] {
  const resources = (deployment as { resources?: ExportedResource[] } | undefined)?.resources ?? [];
  const groups: StateGroup[] = [];
  for (const resource of resources) {
    if (resource.type !== USER_GROUP_TYPE || resource.delete === true || typeof resource.urn !== "string") continue;
    const { __provider: _provider, ...inputs } = resource.inputs ?? {};
    const outputs = resource.outputs ?? {};
    const token = plainSecret(outputs.token);
    groups.push({
      resourceName: nameOfUrn(resource.urn),
      inputs: inputs as unknown as GroupSpec,
      name: typeof outputs.name === "string" ? outputs.name : String(inputs.name),
      properties: plainSecret(outputs.properties),
      ...(typeof token === "string" ? { token } : {}),
    });
  }
  return groups;
}

const ALL_INPUTS: Array<keyof UserGroupArgs> = ["name", "mapping", "properties", "rotationTrigger", "adoptExisting"];

export interface DriftOptions extends RunOptions {
  /** The groups file's entries: also report what `up` of them would change. */
  readonly groups?: readonly unknown[];
}

/**
 * Reads every group of an existing stack from the service, changing nothing
 * (neither the state nor the service), and reports what drifted.
 */
export async function detectDrift(options: DriftOptions): Promise<DriftReport> {
  return inSpan("user_groups.drift", { "user_groups.operation": "drift", "user_groups.stack": options.stack }, async (span) => {
    const report = await detectDriftTraced(options);
    setSpanAttributes(span, () => ({ "user_groups.group_count": report.checked, "user_groups.drift.drifted_count": report.drift.length }));
    return report;
  });
}

async function detectDriftTraced(options: DriftOptions): Promise<DriftReport> {
  const file = options.groups !== undefined ? validateGroups(options.groups) : undefined;
  const shards = await openShards(options);
  try {
    const parts = await shards.parts([], false);
    // Each shard read on its own (the root must exist; a shard an interrupted run never made has nothing).
    const reads = await eachLimited(parts, shardConcurrency(), (part) => readShard(part.options, part.shard === 0));
    const state = reads.flatMap((read) => read?.state ?? []);
    const service = new Map(reads.flatMap((read) => [...(read?.service ?? [])]));
    const drift = compareDrift(state, service, file);
    return { stack: options.stack, backendUrl: reads[0]!.backendUrl, checked: state.length, inSync: drift.length === 0, drift };
  } finally {
    await shards.close();
  }
}

interface ShardRead {
  readonly backendUrl: string;
  readonly state: StateGroup[];
  readonly service: Map<string, ServiceGroup | undefined>;
}

/** One Pulumi stack's groups, from its state and from the service (undefined: no such stack, where that is allowed). */
async function readShard(options: RunOptions, mustExist: true): Promise<ShardRead>;
async function readShard(options: RunOptions, mustExist: boolean): Promise<ShardRead | undefined>;
async function readShard(options: RunOptions, mustExist: boolean): Promise<ShardRead | undefined> {
  return withLockWait(options, async () => {
    let state: StateGroup[] = [];
    const service = new Map<string, ServiceGroup | undefined>();
    const program = async () => {
      const seen: Record<string, pulumi.Output<boolean>> = {};
      for (const group of state) {
        const { properties, ...rest } = group.inputs;
        const args: UserGroupArgs = properties === null || properties === undefined ? rest : { ...rest, properties };
        const resource = new UserGroup(group.resourceName, args, { ignoreChanges: ALL_INPUTS });
        seen[group.resourceName] = pulumi.all([resource.name, resource.properties, resource.token]).apply(([name, props, token]) => {
          service.set(group.resourceName, { name, properties: props, token });
          return true;
        });
      }
      return { seen };
    };
    let prepared: Awaited<ReturnType<typeof openStack>>;
    const tracker = new ChangeTracker();
    try {
      prepared = await openStack(options, program, { mustExist: true });
    } catch (error) {
      if (!mustExist && error instanceof StackNotFoundError) return undefined;
      throw error;
    }
    try {
      const exported = await readStateWithSecrets(prepared.stack);
      // The refresh below runs the provider code the state holds: only ours may run.
      assertOwnProviderCode(exported, options.stack);
      state = stateGroupsOf(exported.deployment);
      if (state.length > 0 || mustExist) {
        await engineRun("preview", options.stack, () => prepared.stack.preview({
          refresh: true,
          ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
          ...(options.onOutput ? { onOutput: options.onOutput } : {}),
          onEvent: (event) => {
            tracker.handle(event);
            const meta = event.resourcePreEvent?.metadata;
            // A group deleted out of band: gone after the refresh, so the program's group is a create.
            if (meta?.op === "create" && meta.type === USER_GROUP_TYPE) service.set(nameOfUrn(meta.urn), undefined);
          },
        }));
      }
    } catch (error) {
      // What the engine said of each group (a rejected key, a base URL the job does not allow), not the CLI's text.
      throw runFailure("preview", options, tracker, error);
    } finally {
      prepared.release();
    }
    return { backendUrl: withoutCredentials(prepared.backendUrl), state, service };
  });
}
