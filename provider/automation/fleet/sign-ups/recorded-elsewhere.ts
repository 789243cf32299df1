// list() on any replica sees a group the moment its `ensure` is answered (issue
// #44 item 4), before its adoption: besides the state, a shard's run record is
// read without the lease (its store's peek), and each `created` entry proven
// under the stack's secret (lease/created-proof.ts) whose group neither the
// state nor this replica holds is read back from the service (the record never
// holds a token): a no-op PUT, as a refresh reads a group (logic/operations.ts
// readCurrentGroup). A group the service does not hold yet (its create not sent,
// or not answered) is not listed: its ensure has not returned. An unproven entry
// is not listed (nor adopted by anyone). No entry, no request: the common case
// costs one record read per shard.
//
// The key that checks the proofs comes from the state this very list read (its
// passphrase secrets manager's salt), never from a key cached by the workspace's
// backend URL: a run of this replica that takes the shard's lease meanwhile
// changes that URL (on PostgreSQL it names the run's epoch, markRun), and a key
// looked up by it was missing, so every entry read as unproven and a group
// answered elsewhere was not listed until its adoption (PostgreSQL's fault
// history; docs/fleet-replicas.md, "The window PostgreSQL's history found").
import type { Deployment } from "@pulumi/pulumi/automation";
import { proofKeyOf, type SelectedStack } from "../../engine";
import { type LeaseStore, type RunRecord, unprovenWhy } from "../../lease";
import { readCurrentGroup } from "../../../logic/operations";
import type { UserGroupViewWithEnvironment } from "../../../wire/schemas";
import type { RunOptions } from "../../model";
import type { FleetGroup } from "../fleet-state";
import { LeaseClients } from "./service-client";

/** The shard's record, read BEFORE its state: an entry adopted between the two reads is then in one of them. */
export function peekRecord(store: LeaseStore | undefined): Promise<RunRecord | undefined> {
  return store?.peek?.() ?? Promise.resolve(undefined);
}

/**
 * The groups `record` (peekRecord) holds as created (proven) and the service holds, other than those in `known`.
 * `shard.state`: the shard's state as this list read it (after the record): the proofs are checked with its key.
 */
export async function recordedElsewhere(
  options: RunOptions,
  shard: { readonly stack: SelectedStack["stack"]; readonly stackName: string; readonly state: Deployment },
  record: RunRecord | undefined,
  known: ReadonlySet<string>,
): Promise<FleetGroup[]> {
  const entries = (record?.created ?? []).filter((entry) => !known.has(entry.resourceName));
  if (entries.length === 0) return [];
  // Derived once per process and salt (state-document.ts), checked against this state: no CLI process, no cache by URL.
  const key = await proofKeyOf(shard.stack, shard.state, shard.stackName);
  const proven = entries.filter((entry) => unprovenWhy(key, entry) === undefined);
  if (proven.length === 0) return [];
  const clients = new LeaseClients(options, undefined);
  try {
    const found = await Promise.all(
      proven.map(async (entry): Promise<FleetGroup | undefined> => {
        const inputs = entry.inputs as { name?: unknown; userGroupId?: unknown; mapping?: unknown; rotationTrigger?: unknown; profile?: unknown };
        if (typeof inputs.name !== "string" || typeof inputs.userGroupId !== "string") return undefined;
        const profile = typeof inputs.profile === "string" ? inputs.profile : undefined;
        const client = clients.for(profile);
        const group = await readCurrentGroup(client, inputs.name, inputs.userGroupId);
        if (group === undefined) return undefined;
        const environment = (group as Partial<UserGroupViewWithEnvironment>).api_environment_tag ?? client.environment;
        return {
          resourceName: entry.resourceName,
          userGroupId: inputs.userGroupId,
          ...(profile !== undefined ? { profile } : {}),
          name: group.name,
          mapping: (inputs.mapping ?? {}) as FleetGroup["mapping"],
          ...(group.properties !== undefined && group.properties !== null ? { properties: group.properties } : {}),
          ...(typeof inputs.rotationTrigger === "string" ? { rotationTrigger: inputs.rotationTrigger } : {}),
          token: group.token,
          teamId: group.team_id,
          ...(environment !== undefined ? { apiEnvironmentTag: environment } : {}),
        };
      }),
    );
    return found.filter((group): group is FleetGroup => group !== undefined);
  } finally {
    await clients.close();
  }
}
