// The fleet's shards, kept open for its life: the stack's shard directory
// (opened with the first call), each shard's Pulumi stack (selected once; each
// run brings its own program) and run lease store, and which shard each
// request of a batch goes to.
import { type SelectedStack, selectStack, PROJECT_NAME } from "../engine";
import { openShards, shardStackName, type OpenedShard, type ShardedStack } from "../shards";
import { type LeaseStore, leaseStoreFor } from "../lease";
import { inSpan, setSpanAttributes } from "../telemetry";
import { backendNotice } from "../backend";
import type { RunOptions } from "../model";
import type { Request } from "./requests";

export class FleetShards {
  /** The stack's shards (shards/directory.ts), opened with the first call. */
  private handle: Promise<ShardedStack> | undefined;
  /** Each shard's Pulumi stack, selected once per fleet. */
  private readonly stackHandles = new Map<number, Promise<SelectedStack>>();
  /** Each shard's run lease store (undefined: a backend without one), made with its stack. */
  private readonly leaseStores = new Map<number, LeaseStore | undefined>();
  /** The shard of each group this fleet has asked for (to name its URN in a scrubbed error). */
  private readonly shardOfGroup = new Map<string, number>();
  /** The backend notice (backend/login-backend.ts) is given once per fleet. */
  private backendNoticed = false;

  /** `rootHeld`: the groups the root stack holds, for a directory made now (default: read from its state; openShards). */
  constructor(
    private readonly options: RunOptions,
    private readonly rootHeld?: () => Promise<readonly string[] | undefined>,
  ) {}

  /** The stack's shards; a failed open lets a later call try again. */
  sharded(): Promise<ShardedStack> {
    if (this.handle === undefined) {
      const handle = this.rootHeld ? openShards(this.options, this.rootHeld) : openShards(this.options);
      this.handle = handle;
      handle.catch(() => {
        if (this.handle === handle) this.handle = undefined;
      });
    }
    return this.handle;
  }

  stackNameOf(shard: number): string {
    return shardStackName(this.options.stack, shard);
  }

  /** The shard a group of this fleet was last routed to (0 when none was). */
  shardOf(resourceName: string): number {
    return this.shardOfGroup.get(resourceName) ?? 0;
  }

  selected(shard: number): Promise<SelectedStack> {
    let handle = this.stackHandles.get(shard);
    if (handle === undefined) {
      const options = { ...this.options, stack: this.stackNameOf(shard) };
      // Selected once per fleet (replicas racing to create it are handled there); each run brings its own program.
      const selecting = selectStack(options, async () => ({})).then((selected) => {
        if (!this.leaseStores.has(shard)) this.leaseStores.set(shard, leaseStoreFor(selected.backendUrl, PROJECT_NAME, options.stack));
        this.noticeBackend(selected.backendUrl);
        return selected;
      });
      handle = selecting;
      this.stackHandles.set(shard, selecting);
      selecting.catch(() => {
        if (this.stackHandles.get(shard) === selecting) this.stackHandles.delete(shard); // let a later call try again
      });
    }
    return handle;
  }

  /** Stacks kept elsewhere than where `pulumi` would look (PULUMI_BACKEND_URL, else `pulumi login`'s backend): a process warning, once. */
  private noticeBackend(backendUrl: string): void {
    if (this.backendNoticed) return;
    this.backendNoticed = true;
    const notice = backendNotice(backendUrl, { ...process.env, ...this.options.envVars }, "fleet");
    if (notice !== undefined) process.emitWarning(`UserGroupFleet: ${notice}`, { type: "UserGroupsWarning", code: "USER_GROUPS_BACKEND_ELSEWHERE" });
  }

  /** The shard's stack and lease store for one run (runShard); kept open after it. */
  async open(shard: number): Promise<OpenedShard> {
    const { stack, backendUrl } = await this.selected(shard);
    return { stack, backendUrl, store: this.leaseStores.get(shard), release: async () => {} };
  }

  /** The batch's requests by the shard of their group (new groups get theirs now, before any run may create them; `assign`). */
  byShard<R extends Request>(batch: readonly R[], assign: boolean, onRouted: (request: R, shard: number) => void): Promise<Map<number, R[]>> {
    return inSpan("user_groups.shards.plan", { "user_groups.operation": batch[0]?.kind, "user_groups.stack": this.options.stack, "user_groups.group_count": batch.length }, async (span) => {
      const shards = await this.sharded();
      const names = [...new Set(batch.map((request) => request.resourceName))];
      const known = assign ? await shards.directory.assign(names, shards.shardSize) : await shards.directory.read();
      const grouped = new Map<number, R[]>();
      for (const request of batch) {
        const shard = known.get(request.resourceName);
        if (shard === undefined) continue; // a remove of a group no shard holds
        this.shardOfGroup.set(request.resourceName, shard);
        onRouted(request, shard);
        grouped.set(shard, [...(grouped.get(shard) ?? []), request]);
      }
      setSpanAttributes(span, () => ({ "user_groups.shard_count": grouped.size }));
      return grouped;
    });
  }

  /** Lets go of every shard's stack and lease store, and of the directory. */
  async close(): Promise<void> {
    const handles = [...this.stackHandles.values()];
    this.stackHandles.clear();
    for (const handle of handles) await handle.then((selected) => selected.dispose(), () => {});
    for (const store of this.leaseStores.values()) await store?.close();
    this.leaseStores.clear();
    const shards = this.handle;
    this.handle = undefined;
    await shards?.then((opened) => opened.close(), () => {});
  }
}
