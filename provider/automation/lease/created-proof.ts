// The proof of a run record's `created` entry (issue #44 item 1): a group a
// fleet's record-first sign-up created on the service and has not adopted into
// the state yet. Whoever can write the backend can write the run record (a
// committed file backend, a pull request's author): an entry there alone proves
// nothing, and a takeover that adopted it would declare a group of the planter's
// choosing under the stack's API key. So each entry carries an HMAC-SHA256 over
// what it says (its resource name, its inputs in canonical JSON, its epoch),
// keyed by HKDF-SHA256 from a secret of the stack's passphrase (PBKDF2 of the
// passphrase with a salt of this package and the stack's name, 1,000,000 rounds
// as Pulumi's own: no table made once serves every stack; the passphrase first
// checked against the state's check value) with the stack's
// name in its `info`. Not from the passphrase secrets manager's key itself: that
// one follows the checkpoint's salt, which a run from another replica's workspace
// may rewrite (engine/state/state-document.ts passphraseProofSecret):
//
// - a planted entry has no proof, or one made without the key: refused;
// - a tampered entry (another name, other inputs, another epoch) fails its proof: refused;
// - an entry copied to another stack (another shard, another fleet, even with
//   the same passphrase) fails there, its key being that stack's: refused.
//
// A refused entry is never adopted: it is named on the run's output with the
// code `run_record_entry_unproven` and dropped from the record. A stack whose
// secrets manager is not the passphrase one has no key this package can read:
// every `created` entry there is refused, and a fleet on it never takes the
// record-first path (its sign-ups go the engine-run path, which needs no record).
//
// What this does not stop: an entry copied back onto the SAME stack from an older
// copy of its own record (a replay), which re-declares a group this stack once
// signed up with those very inputs (adoptExisting: it finds or re-creates it). The
// planter chooses nothing in it; docs/fleet-replicas.md says so.
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { UserGroupsError } from "../../wire/errors";
import type { CreatedEntry } from "../../backends";

const PROOF_PREFIX = "v1:";
const HKDF_SALT = "pulumi-user-groups";
const HKDF_INFO = "run record created entry v1";

/** The key proving this stack's `created` entries, from its passphrase's proof secret (engine: passphraseProofSecret). */
export function createdProofKey(secretsKey: Buffer, stackName: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secretsKey, HKDF_SALT, `${HKDF_INFO}\u0000${stackName}`, 32));
}

/** JSON with every object's keys sorted: the same bytes whoever stored it (PostgreSQL's jsonb reorders keys). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, inner]) => inner !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(",")}}`;
}

function macOf(key: Buffer, entry: CreatedEntry): Buffer {
  const message = canonicalJson({ resourceName: entry.resourceName, inputs: entry.inputs, epoch: entry.epoch ?? null });
  return createHmac("sha256", key).update(message).digest();
}

/** The entry with its proof (made by the holder that creates the group, never for an entry read from the record). */
export function provenEntry(key: Buffer, entry: CreatedEntry): CreatedEntry {
  const { proof: _old, ...rest } = entry;
  return { ...rest, proof: PROOF_PREFIX + macOf(key, rest).toString("base64url") };
}

/** Why an entry is not proven, or undefined when it is. */
export function unprovenWhy(key: Buffer | undefined, entry: CreatedEntry): string | undefined {
  if (key === undefined) return "the stack's secrets manager is not the passphrase one, so no key proves its entries";
  if (typeof entry.proof !== "string" || !entry.proof.startsWith(PROOF_PREFIX)) return "it carries no proof";
  const given = Buffer.from(entry.proof.slice(PROOF_PREFIX.length), "base64url");
  const expected = macOf(key, entry);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return "its proof does not match it (tampered, made without this stack's passphrase, or copied from another stack)";
  }
  return undefined;
}

/** The entries proven with this stack's key, and the others with why. */
export function checkCreatedEntries(key: Buffer | undefined, entries: readonly CreatedEntry[]): { proven: CreatedEntry[]; refused: { entry: CreatedEntry; why: string }[] } {
  const proven: CreatedEntry[] = [];
  const refused: { entry: CreatedEntry; why: string }[] = [];
  for (const entry of entries) {
    const why = unprovenWhy(key, entry);
    if (why === undefined) proven.push(entry);
    else refused.push({ entry, why });
  }
  return { proven, refused };
}

/** An unproven `created` entry of a run record: refused, never adopted (its message is the line a run says). */
export class UnprovenRecordEntryError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly resourceName: string,
    why: string,
  ) {
    super(
      "run_record_entry_unproven",
      `Not adopting ${JSON.stringify(resourceName.slice(0, 200))} listed as created in the run record of stack ${JSON.stringify(stackName)}: ${why}. ` +
        "It was dropped from the record and nothing was declared for it; if your fleet really created it, a later ensure of it adopts it.",
    );
    this.name = "UnprovenRecordEntryError";
  }
}
