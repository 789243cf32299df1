// Mass deletion needs an explicit word. An `up` of a groups file deletes every
// group the stack holds that the file does not declare, so an empty (or wholly
// renamed) file deletes them all: refused unless `allowDeleteAll`. `maxDeletes`
// caps the deletions of one up or destroy.
//
// The deletions are known exactly before the engine runs, from the state and the
// file: a group's resource name is its profile and id (resource-name.ts), so a
// group of the state that the file does not name is deleted, and no other one is
// (a changed id or profile is another name: a delete and a create). No preview is
// needed; the cost is one `pulumi stack export`.
import type { Deployment } from "@pulumi/pulumi/automation";
import { USER_GROUP_TYPE } from "../../resource/user-group-type";
import { UserGroupsError } from "../../wire/errors";
import { nameOfUrn } from "./resource-name";

export interface DeleteGuardOptions {
  /** up: allow a run that deletes every group of a non-empty stack (refused by default). CLI: --allow-delete-all. */
  readonly allowDeleteAll?: boolean;
  /** up/destroy: refuse a run that would delete more than this many groups. CLI: --max-deletes N. */
  readonly maxDeletes?: number;
}

/** How many names a refusal lists. */
const NAMES_SHOWN = 5;

/** An up or destroy refused for what it would delete; nothing was deleted. */
export class DeletionRefusedError extends UserGroupsError {
  constructor(
    code: "delete_all_refused" | "too_many_deletes",
    message: string,
    readonly stackName: string,
    /** Resource names of the groups the run would have deleted. */
    readonly deleting: readonly string[],
  ) {
    super(code, message);
    this.name = "DeletionRefusedError";
  }
}

/** The options, checked: maxDeletes a whole number of 0 or more. */
export function validDeleteGuard(options: DeleteGuardOptions): DeleteGuardOptions {
  const { allowDeleteAll, maxDeletes } = options;
  if (maxDeletes !== undefined && (!Number.isSafeInteger(maxDeletes) || maxDeletes < 0)) {
    throw new UserGroupsError("invalid_option", `maxDeletes must be a whole number of 0 or more, not ${String(maxDeletes)}`);
  }
  return { ...(allowDeleteAll !== undefined ? { allowDeleteAll } : {}), ...(maxDeletes !== undefined ? { maxDeletes } : {}) };
}

/** The resource names of the groups a deployment holds (a replacement's old half, already on its way out, excluded). */
export function heldGroupNames(deployment: Deployment): string[] {
  const resources = ((deployment.deployment as { resources?: unknown[] } | undefined)?.resources ?? []) as Array<{ urn?: unknown; type?: unknown; delete?: unknown }>;
  return resources
    .filter((r) => r.type === USER_GROUP_TYPE && r.delete !== true && typeof r.urn === "string")
    .map((r) => nameOfUrn(r.urn as string))
    .sort();
}

function listed(names: readonly string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).map((name) => JSON.stringify(name));
  return names.length > NAMES_SHOWN ? `${shown.join(", ")} and ${names.length - NAMES_SHOWN} more` : shown.join(", ");
}

export interface PlannedDeletions {
  readonly operation: "up" | "destroy" | "preview";
  readonly stack: string;
  /** Groups the stack holds now. */
  readonly held: number;
  /** Resource names of the groups the run deletes. */
  readonly deleting: readonly string[];
}

/** Throws DeletionRefusedError when the plan deletes every group without allowDeleteAll (up only), or more than maxDeletes. */
export function assertDeletionsAllowed(plan: PlannedDeletions, guard: DeleteGuardOptions): void {
  const count = plan.deleting.length;
  const ofStack = `stack "${plan.stack}"`;
  if (plan.operation !== "destroy" && guard.allowDeleteAll !== true && plan.held > 0 && count === plan.held) {
    throw new DeletionRefusedError(
      "delete_all_refused",
      `This up would delete every group of ${ofStack} (${count}: ${listed(plan.deleting)}): the groups file declares none of them. ` +
        "Refused before any change: nothing was deleted. If that is what you mean, say so: `user-groups up --allow-delete-all` " +
        "(library: allowDeleteAll: true).",
      plan.stack,
      plan.deleting,
    );
  }
  if (guard.maxDeletes !== undefined && count > guard.maxDeletes) {
    throw new DeletionRefusedError(
      "too_many_deletes",
      `This ${plan.operation === "destroy" ? "destroy" : "up"} would delete ${count} groups of ${ofStack} (${listed(plan.deleting)}), ` +
        `more than the ${guard.maxDeletes} allowed (--max-deletes / maxDeletes). Refused before any change: nothing was deleted.`,
      plan.stack,
      plan.deleting,
    );
  }
}
