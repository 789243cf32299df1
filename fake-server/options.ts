// startFakeServer options, validated once at start so mistakes fail loudly.
import { z } from "zod";
import { formatIssues, WORDED_ISSUES } from "../provider/wire/issues.js";
import { type ApiKeyConfig, apiKeyConfigSchema } from "./auth.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import { DEFAULT_MAX_NAMESPACES } from "./namespaces.js";
import { seedSchema, type SeedGroup } from "./seed.js";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_JOURNAL_SIZE = 1000;
/**
 * The journal's byte budget. With the default journalSize it never binds (1000 entries
 * of at most ~16.5 KiB); it bounds a raised journalSize (tests count 100k requests of
 * ~300 bytes each) against large bodies.
 */
export const DEFAULT_JOURNAL_BYTES = 64 * 1024 * 1024;
/** Slow clients: all headers within this many ms of the connection's first byte (Node's default is 60 s). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** The whole request (headers and a body of up to 1 MiB) within this many ms (Node's default is 300 s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/**
 * Connections open at once (each may buffer a body of up to 1 MiB); see connections.ts
 * for what happens past it. Twice the per-address cap: one address cannot take them all.
 */
export const DEFAULT_MAX_CONNECTIONS = 512;
/**
 * Connections open at once from one remote address. Every loopback client shares
 * 127.0.0.1, so this must hold a whole local workload: a `pulumi up` opens at most
 * 16 (the client's pool), the test suite bursts up to 300 requests through undici's
 * global pool (docs/fake-server.md, "Connections").
 */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
/** A connection the server is not working on that receives nothing for this long is closed (also the keep-alive timeout). */
export const DEFAULT_IDLE_TIMEOUT_MS = 5_000;

/**
 * The store's limits (W2 caps a body at 1 MiB, so one group cannot pass the default
 * maxGroupBytes through the API; the totals bound the emulator's memory: about twice the
 * bytes, as JavaScript objects). A write past one is refused: 413 group_too_large for a
 * group over maxGroupBytes, 507 storage_full at maxGroups or maxTotalBytes.
 */
export const DEFAULT_MAX_GROUPS = 100_000;
export const DEFAULT_MAX_GROUP_BYTES = 1024 * 1024;
export const DEFAULT_MAX_TOTAL_BYTES = 256 * 1024 * 1024;

/** @internal */
export const rateLimitSchema = z.object({
  requests: z.number().int().positive(),
  windowSeconds: z.number().positive(),
});

export type LogSink = (line: string) => void;

/** @internal */
export const fakeServerOptionsSchema = z.object({
  host: z.string().min(1).default(DEFAULT_HOST),
  port: z.number().int().min(0).max(65535).default(0),
  apiKeys: z
    .array(apiKeyConfigSchema)
    .min(1, "apiKeys must hold at least one key")
    .refine((keys) => new Set(keys.map((k) => k.key)).size === keys.length, "apiKeys must not repeat a key"),
  dataFile: z.string().min(1).optional(),
  rateLimit: rateLimitSchema.optional(),
  log: z.union([z.boolean(), z.custom<LogSink>((v) => typeof v === "function", "log must be a boolean or a function")]).optional(),
  journalSize: z.number().int().nonnegative().default(DEFAULT_JOURNAL_SIZE),
  journalBytes: z.number().int().positive().default(DEFAULT_JOURNAL_BYTES),
  adminToken: z.string().min(1).optional(),
  headersTimeoutMs: z.number().int().positive().default(DEFAULT_HEADERS_TIMEOUT_MS),
  requestTimeoutMs: z.number().int().positive().default(DEFAULT_REQUEST_TIMEOUT_MS),
  maxConnections: z.number().int().positive().default(DEFAULT_MAX_CONNECTIONS),
  maxConnectionsPerAddress: z.number().int().positive().default(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
  idleTimeoutMs: z.number().int().positive().default(DEFAULT_IDLE_TIMEOUT_MS),
  maxGroups: z.number().int().positive().default(DEFAULT_MAX_GROUPS),
  maxGroupBytes: z.number().int().positive().default(DEFAULT_MAX_GROUP_BYTES),
  maxTotalBytes: z.number().int().positive().default(DEFAULT_MAX_TOTAL_BYTES),
  // Typed as its output: `properties`' schema has no input type of its own (unknown).
  seed: (seedSchema as unknown as z.ZodType<SeedGroup[], SeedGroup[]>).optional(),
  seedFile: z.string().min(1).optional(),
  maxNamespaces: z.number().int().positive().default(DEFAULT_MAX_NAMESPACES),
}).refine((o) => o.headersTimeoutMs <= o.requestTimeoutMs, { path: ["headersTimeoutMs"], message: "must not exceed requestTimeoutMs" });
/** The options of startFakeServer (written out so that the declarations never mention zod). */
export interface FakeServerOptions {
  /** Default 127.0.0.1. */
  host?: string | undefined;
  /** Default 0: any free port. */
  port?: number | undefined;
  /** At least one; no key twice. */
  apiKeys: ApiKeyConfig[];
  /** Persist the state there across restarts (atomic writes). */
  dataFile?: string | undefined;
  /** At most `requests` per `windowSeconds` per API key; past it, 429 with Retry-After. */
  rateLimit?: { requests: number; windowSeconds: number } | undefined;
  /** One line per request: true for stderr, or a function of your own. */
  log?: boolean | LogSink | undefined;
  /** Request journal entries kept (default 1000). */
  journalSize?: number | undefined;
  /** The journal's byte budget (default 64 MiB). */
  journalBytes?: number | undefined;
  /** Admin endpoints from other hosts need this token. */
  adminToken?: string | undefined;
  /** All headers within this many ms (default 10 s). */
  headersTimeoutMs?: number | undefined;
  /** The whole request within this many ms (default 30 s). */
  requestTimeoutMs?: number | undefined;
  /** Connections open at once, in all (default 512); at the cap a newcomer displaces the oldest idle one. */
  maxConnections?: number | undefined;
  /** Connections open at once from one remote address (default 256). */
  maxConnectionsPerAddress?: number | undefined;
  /** A connection that sends nothing for this many ms while no request is in progress is closed (default 5 s). */
  idleTimeoutMs?: number | undefined;
  /** Groups the store holds at most, both environments (default 100,000); a create past it: 507 storage_full. */
  maxGroups?: number | undefined;
  /** One group's name, id, mapping and properties as UTF-8 JSON, at most (default 1 MiB); past it: 413 group_too_large. */
  maxGroupBytes?: number | undefined;
  /** Every group's bytes together, at most (default 256 MiB); a write past it: 507 storage_full. */
  maxTotalBytes?: number | undefined;
  /** Groups in the store from the start (fixed tokens and team ids when given); see SeedGroup. */
  seed?: SeedGroup[] | undefined;
  /** A JSON file of groups to seed (an array, or `{ "groups": [...] }`), read at start. */
  seedFile?: string | undefined;
  /** The most namespaces (`server.namespace()`) open at once (default 1024). */
  maxNamespaces?: number | undefined;
}
/** Options after defaults. */
export interface ResolvedOptions {
  host: string;
  port: number;
  apiKeys: ApiKeyConfig[];
  dataFile?: string | undefined;
  rateLimit?: { requests: number; windowSeconds: number } | undefined;
  log?: boolean | LogSink | undefined;
  journalSize: number;
  journalBytes: number;
  adminToken?: string | undefined;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerAddress: number;
  idleTimeoutMs: number;
  maxGroups: number;
  maxGroupBytes: number;
  maxTotalBytes: number;
  seed?: SeedGroup[] | undefined;
  seedFile?: string | undefined;
  maxNamespaces: number;
}

/** Parses options; the error names the option (never echoes a key). */
export function resolveOptions(options: FakeServerOptions): ResolvedOptions {
  const parsed = fakeServerOptionsSchema.safeParse(options, WORDED_ISSUES);
  if (parsed.success) return parsed.data;
  throw new UserGroupsError("invalid_options", `startFakeServer: invalid options: ${formatIssues(parsed.error, "options").join("; ")}`);
}
