// The fleet's errors: a closed fleet, a group moved to another shard, one
// group's failure in a batch, ensureMany's outcomes, a whole-set run refused on
// a fleet's stack.
import { UserGroupExistsError } from "../../logic/operations";
import type { Environment } from "../../wire/schemas";
import { type GroupSpec, type EnsuredGroup } from "../model";
import { type RunFailure } from "./fleet-isolation";
import { UserGroupsError } from "../../wire/errors";

export class FleetClosedError extends UserGroupsError {
  constructor() {
    super("fleet_closed", "This UserGroupFleet is closed: create a new one to provision more groups.");
    this.name = "FleetClosedError";
  }
}

/**
 * A group found in another shard's directory entry under this shard's lease (a
 * concurrent run put it there meanwhile): not created here; its requests go
 * round again (answers.ts), and fail with this code after too many moves.
 */
export class GroupMoved extends UserGroupsError {
  constructor(
    readonly resourceName: string,
    readonly shard: number,
  ) {
    super("shard_directory_conflict", `User group "${resourceName}" was put in shard ${shard} by a concurrent run while this call waited: asked again there.`);
    this.name = "GroupMoved";
  }
}

/** A group's own failure inside a batch run; the other groups of the run are not affected. */
export class FleetGroupError extends UserGroupsError {
  constructor(
    readonly resourceName: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("fleet_group_failed", `User group "${resourceName}": ${message}`, options);
    this.name = "FleetGroupError";
  }
}

/** ensureMany when some groups failed: each entry's outcome, in the order given. */
export class FleetEnsureError extends UserGroupsError {
  constructor(readonly outcomes: readonly PromiseSettledResult<EnsuredGroup>[]) {
    const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    super(
      "fleet_ensure_failed",
      `${failed.length} of ${outcomes.length} groups failed: ` +
        failed.map((o) => (o.reason instanceof Error ? o.reason.message : String(o.reason))).join("; "),
    );
    this.name = "FleetEnsureError";
  }
}

/** The error of a group the engine failed by a diagnostic of its own (or a failed step it said nothing of). */
export function groupError(resourceName: string, spec: GroupSpec | undefined, diagnostic: string | undefined, cause: unknown): Error {
  if (diagnostic === undefined) return new FleetGroupError(resourceName, "the engine reported this group's step failed, and said nothing more", { cause });
  const exists = /already exists in the (Customer|Testing|API key's) environment/.exec(diagnostic);
  if (exists && spec) return new UserGroupExistsError(spec.userGroupId, exists[1] === "API key's" ? undefined : (exists[1] as Environment));
  return new FleetGroupError(resourceName, diagnostic, { cause });
}

/** The error of a group no run settled: it failed alone, or isolating its batch's failure took too many runs. */
export function unsettledError(resourceName: string, failure: RunFailure | undefined, alone: boolean): Error {
  if (failure === undefined) return new FleetGroupError(resourceName, "the engine's run succeeded but reported nothing of this group; ask again");
  // First lines only: a program's failure carries its stack trace.
  const said = failure.lines.length > 0 ? `: ${failure.lines.map((line) => line.split("\n")[0]).join("; ")}` : "";
  return new FleetGroupError(
    resourceName,
    alone
      ? `the engine's run failed with this group alone, for a reason it charged to no group${said}`
      : `the engine's runs kept failing for a reason charged to no group, and the fleet gave up isolating it${said}; nothing is lost: ask again`,
    { cause: failure.error },
  );
}

/** A whole-set run (the CLI's up/destroy, provisionUserGroups) refused on a fleet's stack. */
export class FleetStackError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    readonly operation: string,
  ) {
    super(
      "fleet_stack",
      `Stack "${stackName}" is a UserGroupFleet's stack: its groups are added one by one by a service, and a whole-set ${operation} ` +
        `would ${operation === "destroy" ? "delete every one of them" : "delete every group the groups file does not list"}. Nothing was changed. ` +
        "Drive this stack with UserGroupFleet (remove() deletes one group), or pass --force if you really mean to.",
    );
    this.name = "FleetStackError";
  }
}
