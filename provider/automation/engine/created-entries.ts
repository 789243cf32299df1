// A run record's `created` entries (a fleet's record-first sign-ups) as a
// takeover, `recover` and a fleet's adopting run meet them: only those proven
// under the stack's secret (lease/created-proof.ts) are kept; each other one is
// said on the run's output (run_record_entry_unproven) and dropped from the record.
import type { Stack } from "@pulumi/pulumi/automation";
import { checkCreatedEntries, createdProofKey, type CreatedEntry, type RunLease, UnprovenRecordEntryError } from "../lease";
import type { GroupSpec } from "../model";
import { passphraseProofSecret, stackSecretsKey } from "./state";

/**
 * What the run record holds for one group (a fleet's sign-up, a checkpoint-free run's intent): the inputs a program
 * declares it with, the lease's epoch, never the token.
 */
export function createdEntryOf(resourceName: string, spec: GroupSpec, epoch: number | undefined): CreatedEntry {
  const { name, userGroupId, mapping, properties, rotationTrigger, profile, adoptExisting } = spec;
  const inputs = Object.fromEntries(Object.entries({ name, userGroupId, mapping, properties, rotationTrigger, profile, adoptExisting }).filter(([, v]) => v !== undefined));
  return { resourceName, inputs, ...(epoch !== undefined ? { epoch } : {}) };
}

/**
 * The key proving this stack's record entries (undefined: not a passphrase stack): the passphrase checked against this
 * state first (its secrets key), then the proof secret of the passphrase alone, which no checkpoint's salt changes.
 */
export async function proofKeyOf(stack: Stack, state: unknown, stackName: string): Promise<Buffer | undefined> {
  const key = await stackSecretsKey(stack, state as Parameters<typeof stackSecretsKey>[1]);
  const secret = key === undefined ? undefined : await passphraseProofSecret(stack);
  return secret === undefined ? undefined : createdProofKey(secret, stackName);
}

/**
 * The record's `created` entries proven under `proofKey`; each other one is
 * said on the run's output (run_record_entry_unproven) and dropped from the
 * record, never adopted.
 */
export async function provenCreated(
  options: { readonly lease: RunLease; readonly stackName: string; readonly onOutput?: (text: string) => void },
  proofKey: Buffer | undefined,
  entries: readonly CreatedEntry[],
): Promise<CreatedEntry[]> {
  const { proven, refused } = checkCreatedEntries(proofKey, entries);
  if (refused.length === 0) return proven;
  for (const { entry, why } of refused) {
    const error = new UnprovenRecordEntryError(options.stackName, entry.resourceName, why);
    options.onOutput?.(`[${error.code}] ${error.message}\n`);
  }
  const dropped = new Set(refused.map(({ entry }) => entry));
  const droppedProofs = new Set(refused.map(({ entry }) => `${entry.resourceName}\u0000${entry.proof ?? ""}`));
  await options.lease.updateWith((record) => ({
    created: (record.created ?? []).filter((entry) => !dropped.has(entry) && !droppedProofs.has(`${entry.resourceName}\u0000${entry.proof ?? ""}`)),
  }));
  return proven;
}

