// The run record beside a stack's run lease, as every backend stores it: who
// holds the lease, since when, the dead runs whose leftovers are not yet dealt
// with, the pending creates to adopt. Its format and its parsing only: the
// rules that read and succeed it stay in automation/lease/record.ts (and reach
// the stores as functions: backend.ts, LeaseRules).
import { z } from "zod";
import { assertValidStackName } from "./stack-name";

/** How often a holder renews its record; a file lease's record says LEASE_TTL_MS past the last renewal. */
export const RENEW_EVERY_MS = 5_000;
export const LEASE_TTL_MS = 20_000;

/** A lease's timing: how long it lives past a renewal, how often its holder renews it. */
export interface LeaseTiming {
  readonly ttlMs: number;
  readonly renewEveryMs: number;
}

export const FILE_LEASE_TIMING: LeaseTiming = { ttlMs: LEASE_TTL_MS, renewEveryMs: RENEW_EVERY_MS };

const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** A run of ours that held the lease: enough to recognise its Pulumi lock and its processes. */
export interface RunClaim {
  readonly runId: string;
  readonly host: string;
  readonly pid: number;
  /** When the run took the lease (ms since the epoch, its host's clock). */
  readonly startedAt: number;
  /** Its last renewal (same clock). */
  readonly renewedAt: number;
  /**
   * The lease's epoch (PostgreSQL leases: one more for every holder). A run with
   * an epoch older than the current one is fenced: the backend refuses its
   * checkpoint writes and its provider processes send nothing more.
   */
  readonly epoch?: number;
}

/** A group whose create a dead run left pending: to be adopted from these inputs. */
export interface AdoptEntry {
  readonly resourceName: string;
  /** The inputs the dead run declared (from its pending create). */
  readonly inputs: Record<string, unknown>;
}

/**
 * A group a fleet created on the service itself, under the lease, and answered
 * before any engine run adopted it into the state (the record-first sign-up,
 * automation/fleet/sign-ups/): to be adopted from these inputs. Never
 * its token: the state is the only place a token is kept.
 */
export interface CreatedEntry {
  readonly resourceName: string;
  /** The inputs a program declares it with (name, userGroupId, mapping, properties, rotationTrigger, profile). */
  readonly inputs: Record<string, unknown>;
  /** The epoch of the lease it was created under (PostgreSQL leases). */
  readonly epoch?: number;
  /** Its HMAC under a key from the stack's secret (automation/lease/created-proof.ts); an entry without a valid one is never adopted. */
  readonly proof?: string;
}

/** What the backend holds beside the lease (written out so that the declarations never mention zod). */
export interface RunRecord extends RunClaim {
  readonly version: 1;
  /** File leases: the lease ends then unless renewed (the holder's clock). */
  readonly expiresAt: number;
  /** The holder let go of it in good order. */
  readonly released: boolean;
  /** Dead runs whose Pulumi lock and pending operations are not dealt with yet. */
  readonly unfinished: readonly RunClaim[];
  readonly adopt: readonly AdoptEntry[];
  /** Groups created by a fleet under the lease, not yet adopted into the state (absent: none). */
  readonly created?: readonly CreatedEntry[];
  /**
   * A checkpoint-free run's intents (automation/engine/intents.ts): the groups it is about to
   * create, each proven as a `created` entry is; a takeover adopts those the service holds and drops the rest.
   */
  readonly intents?: readonly CreatedEntry[];
  /** A checkpoint-free run's groups about to be deleted: a takeover reads them back (a deleted one leaves the state). */
  readonly removing?: readonly string[];
}

const claimSchema = z.object({
  runId: z.string().min(1).max(100),
  host: z.string().max(255),
  pid: z.number().int(),
  startedAt: z.number(),
  renewedAt: z.number(),
  epoch: z.number().int().nonnegative().optional(),
});

const adoptEntrySchema = z.object({
  resourceName: z.string().min(1).max(1024),
  inputs: z.record(z.string(), z.unknown()),
});

const createdEntrySchema = adoptEntrySchema.extend({ epoch: z.number().int().nonnegative().optional(), proof: z.string().max(200).optional() });

const recordSchema = claimSchema.extend({
  version: z.literal(1),
  expiresAt: z.number(),
  released: z.boolean(),
  unfinished: z.array(claimSchema).max(1000),
  adopt: z.array(adoptEntrySchema).max(100_000),
  created: z.array(createdEntrySchema).max(100_000).optional(),
  intents: z.array(createdEntrySchema).max(100_000).optional(),
  removing: z.array(z.string().min(1).max(1024)).max(100_000).optional(),
}) satisfies z.ZodType<RunRecord>;

/** A run record read from the backend: outside data, checked before it decides anything. */
export function parseRunRecord(text: string): RunRecord | undefined {
  if (text.length > MAX_RECORD_BYTES) return undefined;
  try {
    const parsed = recordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** org, project and stack of a stack name as the diy backend files it (a bare name: any org, our project). */
export function stackPath(stack: string, project: string): { org?: string; project: string; stack: string } {
  const parts = assertValidStackName(stack).split("/");
  if (parts.length === 3) return { org: parts[0]!, project: parts[1]!, stack: parts[2]! };
  if (parts.length === 2) return { org: parts[0]!, project, stack: parts[1]! };
  return { project, stack: parts[0]! };
}

/** The most shards one stack may have (shards/directory.ts; a directory store refuses an entry past it). */
export const MAX_SHARDS = 10_000;

/** The stack's last name segment and project, as the backend files its stacks. */
export function stackLeaf(stack: string, project: string): { project: string; leaf: string } {
  const parts = assertValidStackName(stack).split("/");
  return { project: parts.length === 3 ? parts[1]! : project, leaf: parts.at(-1)! };
}

/** The shard number of a stack file or key of the backend (`<leaf>.shard-<n>.json`), if it is one of this stack's. */
export function shardOfStackFile(file: string, leaf: string): number | undefined {
  if (!file.startsWith(`${leaf}.shard-`)) return undefined;
  const match = /^\.shard-(\d{1,6})\.json(\.gz)?$/.exec(file.slice(leaf.length));
  const shard = match ? Number(match[1]) : undefined;
  return shard !== undefined && shard > 0 && shard < MAX_SHARDS ? shard : undefined;
}
