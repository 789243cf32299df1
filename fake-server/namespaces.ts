// Namespaces: isolation for tests that share one server in parallel (as moto's
// per-account state). `server.namespace()` (or `POST /__admin/namespaces`)
// makes fresh API keys bound to a state of their own: a store, a journal, fault
// rules and rate-limit windows that no other namespace (nor the server's own
// keys) sees. Inside one, the wire behaviour is the server's, unchanged: the
// same handlers run on the namespace's store. Namespaces live in memory only
// (never in the data file) and end with `close()` or the server.
import { randomBytes } from "node:crypto";
import { UserGroupsError } from "../provider/wire/errors.js";
import type { Environment } from "../provider/wire/schemas.js";
import type { ApiKeyConfig, KeyRing } from "./auth.js";
import { FaultTable } from "./faults.js";
import { Journal } from "./journal.js";
import { RateLimiter, type RateLimitOptions } from "./rate-limit.js";
import type { SeedGroup } from "./seed.js";
import { Store, type StoreLimits } from "./store.js";

/** The keys a namespace gets when none are asked for: each environment, read-write and read-only. */
export const DEFAULT_NAMESPACE_KEYS: ReadonlyArray<{ environment: Environment; readOnly: boolean }> = [
  { environment: "Customer", readOnly: false },
  { environment: "Customer", readOnly: true },
  { environment: "Testing", readOnly: false },
  { environment: "Testing", readOnly: true },
];
/** The most namespaces a server holds at once, by default. */
export const DEFAULT_MAX_NAMESPACES = 1024;
/** The most keys one namespace may ask for. */
export const MAX_NAMESPACE_KEYS = 16;
/** What a namespace id looks like (the admin API takes it from the path). */
export const NAMESPACE_ID = /^ns-[0-9a-f]{12}$/;

/** What a namespace is made with. */
export interface NamespaceOptions {
  /** The keys to make (default: Customer and Testing, each read-write and read-only, in that order). */
  keys?: ReadonlyArray<{ environment: Environment; readOnly?: boolean | undefined }> | undefined;
  /** Groups to put in its store at once (seed.ts). */
  seed?: SeedGroup[] | undefined;
}

/** One namespace's state: what an API request with one of its keys works on. */
export interface NamespaceState {
  readonly id: string;
  readonly apiKeys: ReadonlyArray<Required<ApiKeyConfig>>;
  readonly store: Store;
  readonly journal: Journal;
  readonly faults: FaultTable;
  readonly limiter: RateLimiter | undefined;
  /** Namespaces are never persisted. */
  readonly persister: undefined;
}

export interface NamespaceSettings {
  readonly journalSize: number;
  readonly journalBytes: number;
  readonly rateLimit: RateLimitOptions | undefined;
  readonly maxNamespaces: number;
  /** Each namespace's store holds the server's limits (groups, bytes per group, bytes in all). */
  readonly storeLimits: StoreLimits;
}

export class Namespaces {
  private readonly byId = new Map<string, NamespaceState>();

  constructor(
    private readonly keys: KeyRing,
    private readonly settings: NamespaceSettings,
  ) {}

  /** A new namespace with fresh keys (refused past maxNamespaces; a bad seed creates nothing). */
  create(options: NamespaceOptions = {}): NamespaceState {
    if (this.byId.size >= this.settings.maxNamespaces) {
      throw new UserGroupsError("too_many_namespaces", `the fake server holds ${this.settings.maxNamespaces} namespaces already; close some first`);
    }
    const wanted = options.keys ?? DEFAULT_NAMESPACE_KEYS;
    if (wanted.length < 1 || wanted.length > MAX_NAMESPACE_KEYS) {
      throw new UserGroupsError("invalid_options", `a namespace needs 1 to ${MAX_NAMESPACE_KEYS} keys`);
    }
    let id: string;
    do id = `ns-${randomBytes(6).toString("hex")}`;
    while (this.byId.has(id));
    const apiKeys = wanted.map((k) => ({
      key: `ugk_${id.slice(3)}_${randomBytes(18).toString("base64url")}`,
      environment: k.environment,
      readOnly: k.readOnly === true,
    }));
    const store = new Store(this.settings.storeLimits);
    if (options.seed !== undefined) store.seed(options.seed);
    const state: NamespaceState = {
      id,
      apiKeys,
      store,
      journal: new Journal(this.settings.journalSize, this.settings.journalBytes, [...this.keys.secrets, ...apiKeys.map((k) => k.key)]),
      faults: new FaultTable(),
      limiter: this.settings.rateLimit === undefined ? undefined : new RateLimiter(this.settings.rateLimit),
      persister: undefined,
    };
    this.byId.set(id, state);
    this.keys.addNamespace(id, apiKeys);
    return state;
  }

  get(id: string): NamespaceState | undefined {
    return this.byId.get(id);
  }

  /** Ends a namespace: its keys are unknown from now on, its state is dropped. False when there was none. */
  remove(id: string): boolean {
    if (!this.byId.delete(id)) return false;
    this.keys.removeNamespace(id);
    return true;
  }

  /** Ids of the namespaces open now. */
  ids(): string[] {
    return [...this.byId.keys()];
  }

  clear(): void {
    for (const id of this.ids()) this.remove(id);
  }
}

/** Empties a namespace as `reset()` empties the server: no groups, an empty journal, no fault rules, fresh rate windows. */
export function resetNamespace(state: NamespaceState): void {
  state.store.reset();
  state.journal.clear();
  state.faults.clear();
  state.limiter?.reset();
}
