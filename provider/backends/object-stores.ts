// The shard directory and the rate budget's slots of an object-store backend
// (object-client.ts): each one object rewritten whole with compare-and-swap on
// the version read (updateObject), so each call is one atomic step against
// every other writer, as the interface asks (backend.ts). The rules (the plan,
// the slot arithmetic) are applied inside the loop: a lost race reads again and
// applies them again.
import { z } from "zod";
import { UserGroupsError } from "../wire/errors";
import type { AssignmentPlan, DirectoryStore, SlotRules, SlotStore } from "./backend";
import { claimEntries } from "./directory-entries";
import { type ObjectClient, updateObject, verifyConditions } from "./object-client";
import { MAX_SHARDS, shardOfStackFile, stackLeaf } from "./run-record";
import { assertValidStackName } from "./stack-name";

const directorySchema = z.object({
  version: z.literal(1),
  initialized: z.boolean(),
  groups: z.record(z.string(), z.number().int().min(0).max(MAX_SHARDS)),
});
type DirectoryData = z.infer<typeof directorySchema>;
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024;

/** `.user-groups/shards/<project>/<stack>/directory.json`. */
export class ObjectShardDirectory implements DirectoryStore {
  private readonly key: string;

  constructor(
    private readonly client: ObjectClient,
    private readonly project: string,
    private readonly stack: string,
  ) {
    this.key = `.user-groups/shards/${encodeURIComponent(project)}/${encodeURIComponent(assertValidStackName(stack))}/directory.json`;
  }

  private parse(body: string | undefined): DirectoryData {
    if (body === undefined) return { version: 1, initialized: false, groups: {} };
    const invalid = (why: string) => new UserGroupsError("shard_directory_invalid", `The shard directory ${this.key} of ${this.client.place} ${why}.`);
    if (body.length > MAX_DIRECTORY_BYTES) throw invalid(`is larger than ${MAX_DIRECTORY_BYTES} bytes`);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      throw invalid("is not JSON");
    }
    const parsed = directorySchema.safeParse(json);
    if (!parsed.success) throw invalid(`is not one this version wrote: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    return parsed.data;
  }

  /** One atomic step: `change` gets the directory and answers the new one (undefined: unchanged) and the result. */
  private async update<T>(change: (data: DirectoryData) => { data?: DirectoryData; result: T }): Promise<T> {
    await verifyConditions(this.client);
    return updateObject(this.client, this.key, (body) => {
      const { data, result } = change(this.parse(body));
      return data === undefined ? { result } : { body: JSON.stringify(data), result };
    });
  }

  async read(): Promise<Map<string, number>> {
    return new Map(Object.entries(this.parse((await this.client.get(this.key))?.body).groups));
  }

  assign(planned: AssignmentPlan): Promise<Map<string, number>> {
    return this.update((data) => {
      const assigned = new Map(Object.entries(data.groups));
      const plan = planned(assigned);
      const fresh = [...plan].filter(([name]) => !assigned.has(name));
      const changed = fresh.length > 0 || !data.initialized;
      return { ...(changed ? { data: { version: 1 as const, initialized: true, groups: { ...data.groups, ...Object.fromEntries(fresh) } } } : {}), result: plan };
    });
  }

  async initialize(rootHeld: () => Promise<readonly string[] | undefined>): Promise<void> {
    if (this.parse((await this.client.get(this.key))?.body).initialized) return;
    const held = await rootHeld();
    if (held === undefined) return;
    await this.update((data) => {
      if (data.initialized) return { result: undefined };
      const groups = { ...data.groups };
      for (const name of held) groups[name] ??= 0;
      return { data: { version: 1, initialized: true, groups }, result: undefined };
    });
  }

  async forget(names: readonly string[], shard: number): Promise<void> {
    if (names.length === 0) return;
    await this.update((data) => {
      const groups = { ...data.groups };
      let changed = false;
      for (const name of names) {
        if (groups[name] === shard) {
          delete groups[name];
          changed = true;
        }
      }
      return { ...(changed ? { data: { ...data, groups } } : {}), result: undefined };
    });
  }

  claim(names: readonly string[], shard: number): Promise<Map<string, number>> {
    return this.update((data) => {
      const { groups, elsewhere, fresh } = claimEntries(data.groups, names, shard);
      return { ...(fresh ? { data: { ...data, initialized: true, groups } } : {}), result: elsewhere };
    });
  }

  async repair(entries: ReadonlyMap<string, number>): Promise<void> {
    if (entries.size === 0) return;
    await this.update((data) => ({ data: { ...data, initialized: true, groups: { ...data.groups, ...Object.fromEntries(entries) } }, result: undefined }));
  }

  async entriesOf(shard: number): Promise<string[]> {
    return [...(await this.read())].filter(([, at]) => at === shard).map(([name]) => name);
  }

  /** The shards whose Pulumi stack exists: `.pulumi/stacks/<project>/<leaf>.shard-<n>.json` (or `.json.gz`). */
  async existingShards(): Promise<number[]> {
    const { project, leaf } = stackLeaf(this.stack, this.project);
    const keys = await this.client.list(`.pulumi/stacks/${project}/`);
    const shards = keys.map((key) => shardOfStackFile(key.slice(key.lastIndexOf("/") + 1), leaf)).filter((n): n is number => n !== undefined);
    return [...new Set(shards)].sort((a, b) => a - b);
  }

  async close(): Promise<void> {}
}

const BUDGET_ID = /^[0-9a-f]{16,128}$/;
const ledgerSchema = z.object({ version: z.literal(1), nextFree: z.number() });

/**
 * `.user-groups/rate-budget/<budget>.json`: the next free slot on the store's
 * clock. A booking is one read and one conditional write (more under contention).
 */
export class ObjectSlotStore implements SlotStore {
  constructor(
    private readonly client: ObjectClient,
    private readonly rules: SlotRules,
  ) {}

  private async change<T>(budgetId: string, step: (nextFree: number | undefined, now: number) => { nextFree: number; result: T }): Promise<T> {
    if (!BUDGET_ID.test(budgetId)) throw new UserGroupsError("rate_budget_dir", `The rate budget's name is malformed.`);
    await verifyConditions(this.client);
    return updateObject(this.client, `.user-groups/rate-budget/${budgetId}.json`, (body) => {
      const now = this.client.now();
      let nextFree: number | undefined;
      try {
        const parsed = body === undefined || body.length > 1_024 ? undefined : ledgerSchema.safeParse(JSON.parse(body));
        nextFree = parsed?.success ? parsed.data.nextFree : undefined;
      } catch {
        nextFree = undefined; // not ours: start afresh
      }
      if (nextFree !== undefined && (nextFree - now > this.rules.maxAheadMs || !Number.isFinite(nextFree))) nextFree = undefined;
      const { nextFree: next, result } = step(nextFree, now);
      return { body: JSON.stringify({ version: 1, nextFree: next }), result };
    });
  }

  book(budgetId: string, intervalMs: number): Promise<number> {
    return this.change(budgetId, (nextFree, now) => {
      const booking = this.rules.book(nextFree, now, intervalMs);
      return { nextFree: booking.nextFree, result: booking.at - now };
    });
  }

  async hold(budgetId: string, holdMs: number): Promise<void> {
    await this.change(budgetId, (nextFree, now) => ({ nextFree: this.rules.hold(nextFree, now, Math.min(holdMs, this.rules.maxHoldMs)), result: undefined }));
  }

  async close(): Promise<void> {}
}
