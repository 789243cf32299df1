// The shard directory's rule in one place (shards/directory-rule.ts): what a
// run of one shard claims before it and forgets after it, under the shard's
// run lease, and the one write allowed without it. On a real file directory,
// with states as the engine exports them; no engine run.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Deployment } from "@pulumi/pulumi/automation";
import { afterEach, describe, expect, it } from "vitest";
import { type ShardDirectory, shardDirectoryFor } from "../../../provider/automation/shards/directory";
import { recordUnlisted, ShardClaims } from "../../../provider/automation/shards/directory-rule";
import { ShardDirectoryConflictError } from "../../../provider/automation/shards/sharded-stack";
import { urnOf } from "../../../provider/automation/model";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";
import { GroupMoved } from "../../../provider/automation/fleet/errors";
import { UserGroupsError } from "../../../provider/wire/errors";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function directory(): ShardDirectory {
  const dir = mkdtempSync(path.join(os.tmpdir(), "directory-rule-"));
  dirs.push(dir);
  return shardDirectoryFor(`file://${dir}`, "user-groups", "rules");
}

/** A shard's state holding these groups (and one half-deleted, which it does not hold). */
function stateHolding(stack: string, names: readonly string[]): Deployment {
  const resources = [
    { urn: `urn:pulumi:${stack}::user-groups::pulumi:pulumi:Stack::user-groups-${stack}`, type: "pulumi:pulumi:Stack" },
    ...names.map((name) => ({ urn: urnOf(stack, "user-groups", USER_GROUP_TYPE, name), type: USER_GROUP_TYPE })),
    { urn: urnOf(stack, "user-groups", USER_GROUP_TYPE, "default.being-replaced"), type: USER_GROUP_TYPE, delete: true },
  ];
  return { version: 3, deployment: { resources } };
}

const entries = async (dir: ShardDirectory) => Object.fromEntries([...(await dir.read())].sort(([a], [b]) => (a < b ? -1 : 1)));

describe("a whole-set run of a shard", () => {
  it("repairs the entries of the groups its state holds, claims the declared ones it does not, and forgets the stale and the deleted after", async () => {
    const dir = directory();
    // held-here names shard 2 (out of step), stale-here names shard 1 but its state does not hold it, other-shard is shard 3's.
    await dir.repair(new Map([["default.held-here", 2], ["default.stale-here", 1], ["default.deleted-here", 1], ["default.other-shard", 3]]));
    const claims = new ShardClaims(dir, "rules.shard-1", 1);
    await claims.beforeWholeSet(stateHolding("rules.shard-1", ["default.held-here", "default.deleted-here"]), ["default.held-here", "default.new-here"]);
    expect(await entries(dir)).toEqual({
      "default.deleted-here": 1,
      "default.held-here": 1,
      "default.new-here": 1,
      "default.other-shard": 3,
      "default.stale-here": 1,
    });
    await claims.afterWholeSet(["default.deleted-here"]);
    // Only this shard's entries go, and only the stale and the deleted: another shard's entry stays.
    expect(await entries(dir)).toEqual({ "default.held-here": 1, "default.new-here": 1, "default.other-shard": 3 });
  });

  it("is refused before any change when a declared group it does not hold is another shard's", async () => {
    const dir = directory();
    await dir.repair(new Map([["default.taken", 2]]));
    const claims = new ShardClaims(dir, "rules", 1);
    const refused = claims.beforeWholeSet(stateHolding("rules.shard-1", []), ["default.taken"]);
    await expect(refused).rejects.toBeInstanceOf(ShardDirectoryConflictError);
    await expect(refused).rejects.toMatchObject({ code: "shard_directory_conflict" });
    expect(await entries(dir)).toEqual({ "default.taken": 2 });
  });
});

describe("a targeted run of a shard (a fleet batch)", () => {
  it("claims its groups and answers those another shard holds; a destroy forgets only the targets its state no longer holds", async () => {
    const dir = directory();
    await dir.repair(new Map([["default.moved", 2], ["default.kept", 1], ["default.removed", 1]]));
    const claims = new ShardClaims(dir, "rules.shard-1", 1);
    const moved = await claims.claimTargets(["default.fresh", "default.moved", "default.kept"]);
    expect([...moved]).toEqual([["default.moved", 2]]);
    expect(await entries(dir)).toEqual({ "default.fresh": 1, "default.kept": 1, "default.moved": 2, "default.removed": 1 });
    // "default.moved" is a target too, but its entry names shard 2: a forget of shard 1 leaves it.
    await claims.forgetGone(["default.kept", "default.removed", "default.moved"], stateHolding("rules.shard-1", ["default.kept"]));
    expect(await entries(dir)).toEqual({ "default.fresh": 1, "default.kept": 1, "default.moved": 2 });
  });

  it("a group moved meanwhile is a UserGroupsError of the catalogue (shard_directory_conflict)", () => {
    const moved = new GroupMoved("default.moved", 2);
    expect(moved).toBeInstanceOf(UserGroupsError);
    expect(moved.code).toBe("shard_directory_conflict");
    expect(moved.message).toContain("shard 2");
  });
});

describe("without the shard's lease", () => {
  it("writes an entry only for a held group that has none, never over one", async () => {
    const dir = directory();
    await dir.repair(new Map([["default.elsewhere", 2]]));
    const known = await dir.read();
    await recordUnlisted(dir, 1, ["default.elsewhere", "default.unlisted"], known);
    expect(await entries(dir)).toEqual({ "default.elsewhere": 2, "default.unlisted": 1 });
  });
});
