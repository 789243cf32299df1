// The shard directory of a file backend: `<backend>/.user-groups/shards/<project>/<stack>/directory.json`
// (0700 directory, 0600 file), rewritten whole under a lock file. Storage only:
// the plan of new assignments comes from shards/directory.ts (AssignmentPlan).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { UserGroupsError } from "../../wire/errors";
import type { AssignmentPlan, DirectoryStore } from "../backend";
import { claimEntries } from "../directory-entries";
import { MAX_SHARDS, shardOfStackFile, stackLeaf } from "../run-record";
import { assertValidStackName } from "../stack-name";
import { withFileLock } from "./file-lock";
import { privateDirs, writePrivate } from "./private-files";

const fileDirectorySchema = z.object({
  version: z.literal(1),
  initialized: z.boolean(),
  groups: z.record(z.string(), z.number().int().min(0).max(MAX_SHARDS)),
});
type FileDirectoryData = z.infer<typeof fileDirectorySchema>;

const LOCK_STALE_MS = 60_000;
const LOCK_WAIT_MS = 30_000;
const MAX_DIRECTORY_BYTES = 64 * 1024 * 1024;

/**
 * `<backend>/.user-groups/shards/<project>/<stack>/directory.json`, rewritten
 * whole (through a temporary file) under `directory.lock` (file-lock.ts),
 * which a crashed holder leaves behind: a lock whose pid is dead on this host,
 * or older than a minute (a critical section takes milliseconds), is broken.
 */
export class FileShardDirectory implements DirectoryStore {
  private readonly dir: string;

  constructor(
    private readonly backendDir: string,
    private readonly project: string,
    private readonly stack: string,
  ) {
    this.dir = path.join(backendDir, ".user-groups", "shards", project, encodeURIComponent(assertValidStackName(stack)));
  }

  private get file(): string {
    return path.join(this.dir, "directory.json");
  }

  private load(): FileDirectoryData {
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, initialized: false, groups: {} };
      throw error;
    }
    if (text.length > MAX_DIRECTORY_BYTES) throw new UserGroupsError("shard_directory_invalid", `The shard directory ${this.file} is larger than ${MAX_DIRECTORY_BYTES} bytes.`);
    const parsed = fileDirectorySchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new UserGroupsError("shard_directory_invalid", `The shard directory ${this.file} is not one this version wrote: ${parsed.error.issues[0]?.message ?? "invalid"}.`);
    return parsed.data;
  }

  private save(data: FileDirectoryData): void {
    writePrivate(this.file, `${JSON.stringify(data)}\n`, false);
  }

  private locked<T>(work: () => T): Promise<T> {
    privateDirs(this.backendDir, this.dir);
    return withFileLock(
      path.join(this.dir, "directory.lock"),
      {
        staleMs: LOCK_STALE_MS,
        waitMs: LOCK_WAIT_MS,
        timedOut: () => new UserGroupsError("shard_directory_locked", `The shard directory ${this.dir} stayed locked; remove directory.lock there if no run is going on.`),
      },
      work,
    );
  }

  async read() {
    return new Map(Object.entries(this.load().groups));
  }

  async assign(planned: AssignmentPlan) {
    return this.locked(() => {
      const data = this.load();
      const assigned = new Map(Object.entries(data.groups));
      const plan = planned(assigned);
      const fresh = [...plan].filter(([name]) => !assigned.has(name));
      // initialize ran first: an uninitialized directory here means the root stack did not exist.
      if (fresh.length > 0 || !data.initialized) this.save({ version: 1, initialized: true, groups: { ...data.groups, ...Object.fromEntries(fresh) } });
      return plan;
    });
  }

  async initialize(rootHeld: () => Promise<readonly string[] | undefined>) {
    if (this.load().initialized) return;
    const held = await rootHeld();
    if (held === undefined) return;
    await this.locked(() => {
      const data = this.load();
      if (data.initialized) return;
      const groups = { ...data.groups };
      for (const name of held) groups[name] ??= 0;
      this.save({ version: 1, initialized: true, groups });
    });
  }

  async forget(names: readonly string[], shard: number) {
    if (names.length === 0) return;
    await this.locked(() => {
      const data = this.load();
      const groups = { ...data.groups };
      for (const name of names) if (groups[name] === shard) delete groups[name];
      this.save({ ...data, groups });
    });
  }

  async claim(names: readonly string[], shard: number) {
    return this.locked(() => {
      const data = this.load();
      const { groups, elsewhere, fresh } = claimEntries(data.groups, names, shard);
      if (fresh) this.save({ ...data, initialized: true, groups });
      return elsewhere;
    });
  }

  async repair(entries: ReadonlyMap<string, number>) {
    if (entries.size === 0) return;
    await this.locked(() => {
      const data = this.load();
      this.save({ ...data, initialized: true, groups: { ...data.groups, ...Object.fromEntries(entries) } });
    });
  }

  async entriesOf(shard: number) {
    return Object.entries(this.load().groups)
      .filter(([, at]) => at === shard)
      .map(([name]) => name);
  }

  async existingShards() {
    const { project, leaf } = stackLeaf(this.stack, this.project);
    let files: string[];
    try {
      files = readdirSync(path.join(this.backendDir, ".pulumi", "stacks", project));
    } catch {
      return [];
    }
    return [...new Set(files.map((file) => shardOfStackFile(file, leaf)).filter((shard): shard is number => shard !== undefined))].sort((a, b) => a - b);
  }

  async close() {}
}
