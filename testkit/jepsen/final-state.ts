// What the checker compares a history with at the end: every shard stack's
// state (`pulumi stack export` through the library, each stack of the project
// whose name is the stack's or one of its shards'), and the shard directory as
// it is stored (read directly: a table of ours on PostgreSQL, a file in a file
// backend), so that a directory the library would misread is still seen.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { PROJECT_NAME, selectStack } from "../../provider/automation/internal";
import type { ShardState, StateGroup } from "./checker";
import { objectClientOf } from "./leases";

/** The type of a UserGroup in a state (provider/resource/user-group.ts USER_GROUP_TYPE). */
const USER_GROUP_TYPE = "pulumi-nodejs:dynamic/pulumi-user-groups:UserGroup";
/** Pulumi's secret envelope's signature key. */
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

/**
 * The groups an exported state (with secrets shown) holds, read here rather
 * than by the library's own reader, so that the checker does not trust the code
 * it checks: every live UserGroup resource with its userGroupId and token.
 */
export function groupsOfDeployment(deployment: unknown): StateGroup[] {
  const resources = ((deployment as { deployment?: { resources?: unknown[] } })?.deployment?.resources ?? []) as Array<Record<string, unknown>>;
  const groups: StateGroup[] = [];
  for (const resource of resources) {
    if (resource["type"] !== USER_GROUP_TYPE || resource["delete"] === true || typeof resource["urn"] !== "string") continue;
    const outputs = (resource["outputs"] ?? {}) as Record<string, unknown>;
    let token = outputs["token"];
    if (token !== null && typeof token === "object" && SECRET_SIG in token) {
      const plaintext = (token as { plaintext?: unknown }).plaintext;
      token = typeof plaintext === "string" ? JSON.parse(plaintext) : undefined;
    }
    if (typeof outputs["userGroupId"] !== "string" || typeof token !== "string") continue; // a create that never finished
    groups.push({ resourceName: resource["urn"].split("::").at(-1)!, userGroupId: outputs["userGroupId"], token });
  }
  return groups;
}

export interface StateSource {
  readonly stack: string;
  /** The backend as the checker reaches it (never through a proxy). */
  readonly backendUrl: string;
  readonly workDir: string;
  readonly envVars: Record<string, string>;
}

/**
 * Every shard stack's groups. A stack that does not exist holds none. The shards
 * looked at: 0 up to `maxShard` (give the directory's highest and more: a
 * shard the directory forgot is still read). Not `pulumi stack ls`: on a
 * PostgreSQL backend it was seen to hang for minutes.
 */
export async function readShardStates(source: StateSource, maxShard: number): Promise<ShardState[]> {
  const shards: ShardState[] = [];
  for (let shard = 0; shard <= maxShard; shard++) {
    const stack = shard === 0 ? source.stack : `${source.stack}.shard-${shard}`;
    let selected: Awaited<ReturnType<typeof selectStack>>;
    try {
      selected = await selectStack({ stack, backendUrl: source.backendUrl, workDir: source.workDir, envVars: source.envVars }, async () => ({}), { mustExist: true });
    } catch (error) {
      if ((error as { code?: string }).code === "stack_not_found") continue;
      throw error;
    }
    try {
      shards.push({ stack, shard, groups: groupsOfDeployment(await selected.stack.exportStack()) });
    } finally {
      selected.dispose();
    }
  }
  return shards;
}

/** The shard directory as stored: resource name -> shard. */
export async function readDirectory(stack: string, backendUrl: string): Promise<Map<string, number>> {
  const stackKey = `${PROJECT_NAME}/${stack}`;
  if (backendUrl.startsWith("file://")) {
    const dir = new URL(backendUrl).pathname;
    const file = path.join(dir, ".user-groups", "shards", PROJECT_NAME, encodeURIComponent(stack), "directory.json");
    try {
      const data = JSON.parse(readFileSync(file, "utf8")) as { groups?: Record<string, number> };
      return new Map(Object.entries(data.groups ?? {}));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
      throw error;
    }
  }
  const store = objectClientOf(backendUrl);
  if (store !== undefined) {
    const body = (await store.get(`.user-groups/shards/${PROJECT_NAME}/${encodeURIComponent(stack)}/directory.json`))?.body;
    const data = body === undefined ? {} : (JSON.parse(body) as { groups?: Record<string, number> });
    return new Map(Object.entries(data.groups ?? {}));
  }
  const client = new Client({ connectionString: backendUrl });
  await client.connect();
  try {
    const exists = await client.query("SELECT to_regclass('user_groups_shard_members') AS t");
    if (exists.rows[0]?.t === null) return new Map();
    const rows = await client.query<{ resource_name: string; shard: number }>("SELECT resource_name, shard FROM user_groups_shard_members WHERE stack_key = $1", [stackKey]);
    return new Map(rows.rows.map((row) => [row.resource_name, row.shard]));
  } finally {
    await client.end();
  }
}
