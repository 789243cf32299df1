// The leases a history's stack holds (testkit/jepsen/run-history.ts): who holds
// each and when it last renewed, read from the backend itself (PostgreSQL's lease
// table, a file backend's lease files), for the time from r1's last renewal.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { PROJECT_NAME } from "../../provider/automation/internal";
import { AzureBlobClient, GcsClient, type ObjectClient, S3Client } from "../../provider/backends";

/** An object store's client for its backend URL (credentials from this process's environment), or undefined for another backend. */
export function objectClientOf(backendUrl: string): ObjectClient | undefined {
  const scheme = backendUrl.slice(0, backendUrl.indexOf(":"));
  return scheme === "s3" ? new S3Client(backendUrl) : scheme === "gs" ? new GcsClient(backendUrl) : scheme === "azblob" ? new AzureBlobClient(backendUrl) : undefined;
}

/** A held lease: which holder (its epoch or lease file number) and when it last renewed (ms since the epoch). */
export interface HeldLease {
  readonly epoch: number;
  readonly renewedAt: number;
}

/**
 * The leases held on this history's stack and its shards, by stack key. The
 * replicas run on this machine, so the database's clock and a lease file's are
 * this one's.
 */
export async function heldLeases(backendUrl: string, stack: string): Promise<Map<string, HeldLease>> {
  const ours = (name: string) => name === stack || name.startsWith(`${stack}.shard-`);
  const held = new Map<string, HeldLease>();
  if (backendUrl.startsWith("file://")) {
    const root = path.join(new URL(backendUrl).pathname, ".user-groups", "leases", PROJECT_NAME);
    for (const dir of existsSync(root) ? readdirSync(root) : []) {
      if (!ours(decodeURIComponent(dir))) continue;
      const numbers = readdirSync(path.join(root, dir)).flatMap((f) => /^lease-(\d+)\.json$/.exec(f)?.[1] ?? []).map(Number);
      if (numbers.length === 0) continue;
      const epoch = Math.max(...numbers);
      try {
        const record = JSON.parse(readFileSync(path.join(root, dir, `lease-${epoch}.json`), "utf8")) as { renewedAt?: unknown; released?: unknown };
        if (typeof record.renewedAt === "number" && record.released !== true) held.set(dir, { epoch, renewedAt: record.renewedAt });
      } catch {
        // being written
      }
    }
    return held;
  }
  const store = objectClientOf(backendUrl);
  if (store !== undefined) {
    const root = `.user-groups/leases/${PROJECT_NAME}/`;
    for (const key of await store.list(root)) {
      const dir = key.slice(root.length, key.lastIndexOf("/"));
      if (!key.endsWith("/lease.json") || !ours(decodeURIComponent(dir))) continue;
      const body = (await store.get(key))?.body;
      try {
        const envelope = JSON.parse(body ?? "null") as { epoch?: unknown; record?: { renewedAt?: unknown; released?: unknown } } | null;
        const renewedAt = envelope?.record?.renewedAt;
        if (typeof envelope?.epoch === "number" && typeof renewedAt === "number" && envelope.record?.released !== true) held.set(dir, { epoch: envelope.epoch, renewedAt });
      } catch {
        // not a lease
      }
    }
    return held;
  }
  const client = new Client({ connectionString: backendUrl });
  await client.connect();
  try {
    const rows = await client.query<{ stack_key: string; epoch: string; renewed: number }>(
      "SELECT stack_key, epoch::text AS epoch, (EXTRACT(EPOCH FROM updated_at) * 1000)::float8 AS renewed FROM user_groups_run_leases WHERE NOT released AND expires_at > now()",
    );
    for (const row of rows.rows) if (ours(row.stack_key.slice(row.stack_key.indexOf("/") + 1))) held.set(row.stack_key, { epoch: Number(row.epoch), renewedAt: row.renewed });
  } finally {
    await client.end().catch(() => undefined);
  }
  return held;
}

/**
 * The last renewal of the leases held before a fault (`before`), as `after` (read
 * once the fault landed) shows it when the same holder still holds it: a holder
 * that was paused or cut off renews no more, and one whose lease was taken over
 * meanwhile last renewed as `before` says (at most one renewal period early).
 */
export function lastRenewalOf(before: ReadonlyMap<string, HeldLease>, after: ReadonlyMap<string, HeldLease>): number | undefined {
  let last: number | undefined;
  for (const [key, lease] of before) {
    const now = after.get(key);
    const renewed = now !== undefined && now.epoch === lease.epoch ? now.renewedAt : lease.renewedAt;
    last = Math.max(last ?? 0, renewed);
  }
  return last;
}

