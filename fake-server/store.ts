// The in-memory state: user groups keyed by environment + id, with a token index.
// Every method is synchronous on purpose: node runs one callback at a time, so a
// check followed by an insert here can never interleave with another request
// (that is what makes concurrent get-or-create of one id create exactly one group).
import { randomBytes } from "node:crypto";
import { z } from "zod";
import {
  environmentSchema,
  jsonObjectSchema,
  type Environment,
  type Mapping,
  type Properties,
} from "../provider/wire/schemas.js";
import { ApiError } from "./errors.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import type { SeedGroup } from "./seed.js";

/** @internal A stored group, exactly as `GET /__admin/groups` and the data file show it. */
export const storedGroupSchema = z.object({
  environment: environmentSchema,
  user_group_id: z.string(),
  name: z.string(),
  mapping: z.record(z.string(), z.string()),
  properties: jsonObjectSchema.nullable(),
  team_id: z.number().int().positive(),
  token: z.string(),
});
export interface StoredGroup {
  environment: Environment;
  user_group_id: string;
  name: string;
  mapping: Mapping;
  properties: Properties | null;
  team_id: number;
  token: string;
}

/** @internal What the data file holds. */
export const snapshotSchema = z.object({
  version: z.literal(1),
  next_team_id: z.number().int().positive(),
  groups: z.array(storedGroupSchema),
});
export interface Snapshot {
  version: 1;
  next_team_id: number;
  groups: StoredGroup[];
}

export interface NewGroup {
  name: string;
  mapping: Mapping;
  properties: Properties | null;
}

export interface GroupChanges {
  name?: string;
  mapping?: Mapping;
  properties?: Properties | null;
}

/** A fresh user-group token: 32 bytes from the CSPRNG as 64 lowercase hex characters (W10). */
export function newToken(): string {
  return randomBytes(32).toString("hex");
}

/** How much the store holds at most (startFakeServer's maxGroups, maxGroupBytes, maxTotalBytes). */
export interface StoreLimits {
  /** Groups in all, both environments. */
  readonly maxGroups: number;
  /** One group's name, id, mapping and properties, as UTF-8 JSON. */
  readonly maxGroupBytes: number;
  /** The sum of every group's bytes. */
  readonly maxTotalBytes: number;
}

const NO_LIMITS: StoreLimits = { maxGroups: Number.MAX_SAFE_INTEGER, maxGroupBytes: Number.MAX_SAFE_INTEGER, maxTotalBytes: Number.MAX_SAFE_INTEGER };

/** What a group costs the store: its user data as UTF-8 JSON (the token and team_id are fixed-size and not counted). */
export function groupBytes(group: { user_group_id: string; name: string; mapping: Mapping; properties: Properties | null }): number {
  return Buffer.byteLength(JSON.stringify([group.user_group_id, group.name, group.mapping, group.properties]), "utf8");
}

function groupKey(environment: Environment, id: string): string {
  // Environment names never contain a NUL, so this key cannot collide.
  return `${environment}\u0000${id}`;
}

export class Store {
  private readonly groups = new Map<string, StoredGroup>();
  /** token -> group key; tokens are unique across environments. */
  private readonly byToken = new Map<string, string>();
  private nextTeamId = 1;
  /** group key -> groupBytes, and their sum: checked at every write that can grow the store. */
  private readonly bytes = new Map<string, number>();
  private totalBytes = 0;

  constructor(private readonly limits: StoreLimits = NO_LIMITS) {}

  /** Called after every mutation (persistence hooks in here). */
  onChange: () => void = () => {};
  /** Counts mutations, so a caller can tell whether an operation changed anything. */
  version = 0;

  get(environment: Environment, id: string): StoredGroup | undefined {
    return this.groups.get(groupKey(environment, id));
  }

  /** The group holding `token`, but only if it lives in `environment` (W9). */
  getByToken(environment: Environment, token: string): StoredGroup | undefined {
    const key = this.byToken.get(token);
    if (key === undefined) return undefined;
    const group = this.groups.get(key);
    return group !== undefined && group.environment === environment ? group : undefined;
  }

  /** Get-or-create (W5). */
  getOrCreate(environment: Environment, id: string, init: NewGroup): { group: StoredGroup; created: boolean } {
    const existing = this.get(environment, id);
    if (existing !== undefined) return { group: existing, created: false };
    const size = this.admit(groupBytes({ user_group_id: id, ...init }), 0);
    if (this.groups.size >= this.limits.maxGroups) {
      throw new ApiError(507, "storage_full", `the emulator holds ${this.groups.size} groups, its limit (maxGroups, --max-groups ${this.limits.maxGroups}): delete some, or start it with a higher limit`);
    }
    const group: StoredGroup = {
      environment,
      user_group_id: id,
      name: init.name,
      mapping: init.mapping,
      properties: init.properties,
      team_id: this.nextTeamId++,
      token: this.uniqueToken(),
    };
    this.insert(group, size);
    this.changed();
    return { group, created: true };
  }

  update(environment: Environment, id: string, changes: GroupChanges): StoredGroup | undefined {
    const group = this.get(environment, id);
    if (group === undefined) return undefined;
    const key = groupKey(environment, id);
    const size = this.admit(groupBytes({ ...group, ...changes }), this.bytes.get(key) ?? 0);
    this.totalBytes += size - (this.bytes.get(key) ?? 0);
    this.bytes.set(key, size);
    if (changes.name !== undefined) group.name = changes.name;
    if (changes.mapping !== undefined) group.mapping = changes.mapping;
    if (changes.properties !== undefined) group.properties = changes.properties;
    this.changed();
    return group;
  }

  /** Issues a new token; the old one stops working at once (W7). */
  rotate(environment: Environment, token: string): StoredGroup | undefined {
    const group = this.getByToken(environment, token);
    if (group === undefined) return undefined;
    this.byToken.delete(group.token);
    group.token = this.uniqueToken();
    this.byToken.set(group.token, groupKey(group.environment, group.user_group_id));
    this.changed();
    return group;
  }

  remove(group: StoredGroup): void {
    const key = groupKey(group.environment, group.user_group_id);
    this.totalBytes -= this.bytes.get(key) ?? 0;
    this.bytes.delete(key);
    this.groups.delete(key);
    this.byToken.delete(group.token);
    this.changed();
  }

  /** Every group, copied so callers cannot change the store by accident. */
  list(): StoredGroup[] {
    return [...this.groups.values()].map((g) => structuredClone(g));
  }

  /**
   * Empties the store. The team_id counter keeps counting so an id handed out
   * before a reset never comes back for a different group.
   */
  reset(): void {
    this.groups.clear();
    this.byToken.clear();
    this.bytes.clear();
    this.totalBytes = 0;
    this.changed();
  }

  snapshot(): Snapshot {
    return { version: 1, next_team_id: this.nextTeamId, groups: [...this.groups.values()] };
  }

  /**
   * Replaces the whole state from a snapshot (no onChange: it is already on disk). A data
   * file over the limits is loaded whole; writes that grow the store are refused until it
   * is under them again.
   */
  load(snapshot: Snapshot): void {
    this.groups.clear();
    this.byToken.clear();
    this.bytes.clear();
    this.totalBytes = 0;
    let maxTeamId = 0;
    for (const group of snapshot.groups) {
      this.insert({ ...group }, groupBytes(group));
      maxTeamId = Math.max(maxTeamId, group.team_id);
    }
    this.nextTeamId = Math.max(snapshot.next_team_id, maxTeamId + 1);
  }

  /**
   * Stores seeded groups (seed.ts checked their shapes), all or none: a token or
   * team_id already used, or an id twice in the seed, refuses the whole seed. A
   * group whose id is already in its environment is left as it is (a restart with
   * a data file and the same seed). Returns the groups stored.
   */
  seed(groups: readonly SeedGroup[]): StoredGroup[] {
    const teamIds = new Set([...this.groups.values()].map((g) => g.team_id));
    const keys = new Set<string>();
    const tokens = new Set<string>();
    const fresh = groups.filter((g) => this.get(g.environment ?? "Customer", g.user_group_id) === undefined);
    for (const [index, g] of fresh.entries()) {
      const key = groupKey(g.environment ?? "Customer", g.user_group_id);
      const problem = keys.has(key)
        ? "its user_group_id is already in the seed for its environment"
        : g.token !== undefined && (this.byToken.has(g.token) || tokens.has(g.token))
          ? "its token is already in use"
          : g.team_id !== undefined && teamIds.has(g.team_id)
            ? "its team_id is already in use"
            : undefined;
      if (problem !== undefined) throw new UserGroupsError("invalid_seed", `seed group ${index} (user_group_id ${JSON.stringify(g.user_group_id.slice(0, 100))}): ${problem}; nothing was seeded`);
      keys.add(key);
      if (g.token !== undefined) tokens.add(g.token);
      if (g.team_id !== undefined) teamIds.add(g.team_id);
    }
    // Team ids handed out here come after every fixed one.
    for (const g of fresh) if (g.team_id !== undefined) this.nextTeamId = Math.max(this.nextTeamId, g.team_id + 1);
    const stored = fresh.map((g): StoredGroup => {
      let teamId = g.team_id;
      if (teamId === undefined) {
        while (teamIds.has(this.nextTeamId)) this.nextTeamId += 1;
        teamId = this.nextTeamId++;
        teamIds.add(teamId);
      }
      const group: StoredGroup = {
        environment: g.environment ?? "Customer",
        user_group_id: g.user_group_id,
        name: g.name,
        mapping: { ...g.mapping },
        properties: g.properties ?? null,
        team_id: teamId,
        token: g.token ?? this.uniqueToken(),
      };
      this.insert(group, groupBytes(group));
      return group;
    });
    // Ids handed out later never meet a seeded one.
    for (const g of stored) this.nextTeamId = Math.max(this.nextTeamId, g.team_id + 1);
    if (stored.length > 0) this.changed();
    return stored.map((g) => structuredClone(g));
  }

  get size(): number {
    return this.groups.size;
  }

  private changed(): void {
    this.version += 1;
    this.onChange();
  }

  /** The store's bytes in all (what maxTotalBytes bounds). */
  get bytesUsed(): number {
    return this.totalBytes;
  }

  /**
   * A write that makes a group `size` bytes (it was `before`), checked against the limits
   * before anything changes: 413 for a group over maxGroupBytes, 507 once the total would
   * pass maxTotalBytes. Returns `size`.
   */
  private admit(size: number, before: number): number {
    if (size > this.limits.maxGroupBytes) {
      throw new ApiError(413, "group_too_large", `the group would hold ${size} bytes (name, id, mapping and properties as JSON); the emulator's limit is ${this.limits.maxGroupBytes} (maxGroupBytes, --max-group-bytes)`);
    }
    if (size > before && this.totalBytes - before + size > this.limits.maxTotalBytes) {
      throw new ApiError(507, "storage_full", `the emulator holds ${this.totalBytes} bytes of groups and this write would pass its limit of ${this.limits.maxTotalBytes} (maxTotalBytes, --max-total-bytes): delete some, or start it with a higher limit`);
    }
    return size;
  }

  private insert(group: StoredGroup, size: number): void {
    const key = groupKey(group.environment, group.user_group_id);
    this.groups.set(key, group);
    this.byToken.set(group.token, key);
    this.totalBytes += size - (this.bytes.get(key) ?? 0);
    this.bytes.set(key, size);
  }

  private uniqueToken(): string {
    // A collision of 256 random bits will not happen, but W10 promises uniqueness.
    for (;;) {
      const token = newToken();
      if (!this.byToken.has(token)) return token;
    }
  }
}
