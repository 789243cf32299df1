// What a change of inputs does to a group (R2): a new id or profile replaces it,
// name/mapping/properties update it in place (PUT), a new rotationTrigger
// rotates its token in place (POST). Nothing else is a change.
import { isDeepStrictEqual } from "node:util";
import type { CheckedInputs } from "./inputs";

export interface DiffOutcome {
  changes: boolean;
  replaces: string[];
  /**
   * Inputs that change in place: the update PUTs name, mapping and properties
   * (fieldsToUpdate) and rotates the token for rotationTrigger. Not passed to the
   * engine (a preview shows the changed inputs from its own comparison).
   */
  updates: string[];
  deleteBeforeReplace: boolean;
}

/** `olds` are the old outputs (what the state holds), `news` the checked new inputs. */
export function diffUserGroup(olds: Partial<CheckedInputs>, news: CheckedInputs): DiffOutcome {
  const replaces: string[] = [];
  if (olds.userGroupId !== news.userGroupId) replaces.push("userGroupId");
  if ((olds.profile ?? "") !== (news.profile ?? "")) replaces.push("profile");

  const updates: string[] = [];
  if (olds.name !== news.name) updates.push("name");
  if (!isDeepStrictEqual(olds.mapping ?? {}, news.mapping ?? {})) updates.push("mapping");
  if (!isDeepStrictEqual(olds.properties ?? null, news.properties ?? null)) updates.push("properties");
  if ((olds.rotationTrigger ?? null) !== (news.rotationTrigger ?? null)) updates.push("rotationTrigger");

  return {
    changes: replaces.length > 0 || updates.length > 0,
    replaces,
    updates,
    // With the same id under another profile, creating first could meet the old
    // group itself (both profiles may point at one environment): delete it first.
    deleteBeforeReplace: replaces.length > 0 && !replaces.includes("userGroupId"),
  };
}

/** The fields a PUT must send to bring the group to `news`; empty when none changed (then no PUT is sent). */
export function fieldsToUpdate(olds: Partial<CheckedInputs>, news: CheckedInputs): string[] {
  return diffUserGroup(olds, news).updates.filter((field) => field !== "rotationTrigger");
}
