// startFakeServer options, validated once at start so mistakes fail loudly.
import { z } from "zod";
import { apiKeyConfigSchema } from "./auth.js";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_JOURNAL_SIZE = 1000;

export const rateLimitSchema = z.object({
  requests: z.number().int().positive(),
  windowSeconds: z.number().positive(),
});

export type LogSink = (line: string) => void;

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
  adminToken: z.string().min(1).optional(),
});
export type FakeServerOptions = z.input<typeof fakeServerOptionsSchema>;
export type ResolvedOptions = z.output<typeof fakeServerOptionsSchema>;

/** Parses options; the error names the option (never echoes a key). */
export function resolveOptions(options: FakeServerOptions): ResolvedOptions {
  const parsed = fakeServerOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.join(".") ?? "";
  throw new Error(`startFakeServer: invalid option ${where === "" ? "" : `"${where}"`}: ${issue?.message ?? "invalid"}`);
}

/** Loopback hosts; anything else exposes the admin endpoints to the network. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}
