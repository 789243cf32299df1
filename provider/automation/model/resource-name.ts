// A group's Pulumi resource name, `<profile or "default">.<userGroupId>`, as an
// encoding Pulumi's syntax cannot misread. An id is data (CONTRACT F6), but a
// resource name ends up in a URN and in `--target`, where `*` is a glob and `::`
// separates a URN's parts; control and bidi characters would reach terminals
// through Pulumi's own progress text. Ids free of all of these (nearly every id
// in use) keep the name they always had, so an upgrade replaces no group; any
// other id has exactly those characters, and `%`, percent-encoded (UTF-8).
// A name is read back by decoding, never by searching for separators.
import { UserGroupsError } from "../../wire/errors";

/** The profile part of the name of a group declared without a profile. */
export const NO_PROFILE = "default";

/** Control, format and bidi characters: invisible, or rewriting what a terminal shows (a RegExp character-class body). */
export const CONTROLS = "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb";

/** An id that holds any of these is encoded (a lone `:` is harmless and kept raw in other ids). */
const FORCES_ENCODING = new RegExp(`[%*${CONTROLS}]|::`, "u");

/** What an encoded id has percent-encoded: those, and every `:`. */
const ENCODED = new RegExp(`[%*:${CONTROLS}]`, "gu");

function percentEncode(char: string): string {
  return [...Buffer.from(char, "utf8")].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join("");
}

/** The id's part of a resource name. */
export function encodeUserGroupId(userGroupId: string): string {
  return FORCES_ENCODING.test(userGroupId) ? userGroupId.replace(ENCODED, percentEncode) : userGroupId;
}

/** The Pulumi resource name of a group: unique per (profile, userGroupId), free of Pulumi syntax. */
export function resourceNameOf(spec: { readonly profile?: string | undefined; readonly userGroupId: string }): string {
  return `${spec.profile ?? NO_PROFILE}.${encodeUserGroupId(spec.userGroupId)}`;
}

export interface GroupIdentity {
  readonly userGroupId: string;
  readonly profile?: string;
}

export class ResourceNameError extends UserGroupsError {
  constructor(readonly resourceName: string) {
    super("invalid_resource_name", `${JSON.stringify(resourceName)} is not the resource name of a user group (<profile>.<userGroupId>).`);
    this.name = "ResourceNameError";
  }
}

/** The group a resource name stands for: the inverse of resourceNameOf. */
export function groupOfResourceName(resourceName: string): GroupIdentity {
  const dot = resourceName.indexOf(".");
  if (dot <= 0) throw new ResourceNameError(resourceName);
  const profile = resourceName.slice(0, dot);
  const encoded = resourceName.slice(dot + 1);
  let userGroupId: string;
  try {
    userGroupId = encoded.includes("%") ? decodeURIComponent(encoded) : encoded;
  } catch {
    throw new ResourceNameError(resourceName);
  }
  return profile === NO_PROFILE ? { userGroupId } : { userGroupId, profile };
}

/**
 * The name part of a URN, `urn:pulumi:<stack>::<project>::<type>::<name>`:
 * everything after the third `::` (stack, project and type never hold one).
 */
export function nameOfUrn(urn: string): string {
  const parts = urn.split("::");
  if (parts.length < 4 || !parts[0]!.startsWith("urn:pulumi:")) throw new ResourceNameError(urn);
  return parts.slice(3).join("::");
}

/** A URN of a resource of ours, built from parts that carry no `::` and (the name) no `*`. */
export function urnOf(stack: string, project: string, type: string, resourceName: string): string {
  return `urn:pulumi:${stack}::${project}::${type}::${resourceName}`;
}
