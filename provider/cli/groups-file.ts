// Reading a groups file, which is untrusted input: a pull request controls it.
// Everything is bounded before anything heavy runs: the file itself (a regular
// file, not a symlink, read by a bounded read: regular-file.ts), YAML anchors and aliases (refused: a few hundred bytes of
// nested aliases expand to hundreds of megabytes in any consumer), and each
// group's serialized properties (the wire's 1 MiB, groups-spec.ts). Every
// problem names the file and the entry.
import yaml from "js-yaml";
import { type GroupSpec, groupsDocumentSchema, validateGroups, FileRefusedError, readRegularFile } from "../automation/offline";
import { didYouMean } from "../wire/did-you-mean";
import { UserGroupsError } from "../wire/errors";
import { quoteForMessage } from "../wire/issues";
import { UsageError } from "./args";

/** Far above any real groups file (5000 groups are ~1 MiB), far below what hurts. */
export const MAX_GROUPS_FILE_BYTES = 16 * 1024 * 1024;

/** YAML's anchors and aliases are refused: a groups file never needs them. */
class AnchorRefused extends UserGroupsError {
  constructor(message: string) {
    super("yaml_anchor_refused", message);
    this.name = "AnchorRefused";
  }
}

function refuseAnchors(eventType: string, state: { anchor?: string | null; line: number }): void {
  // A node that carries an anchor closes with state.anchor set; without anchors no alias can resolve.
  if (eventType === "close" && state.anchor !== null && state.anchor !== undefined) {
    throw new AnchorRefused(`YAML anchors and aliases are not accepted (anchor "&${state.anchor}" ending on line ${state.line + 1}); write each value out`);
  }
}

/** A second guard: an object reached twice is an alias (js-yaml shares the aliased object). Linear in the distinct nodes. */
function findSharedNode(root: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null) continue;
    if (seen.has(node)) return true;
    seen.add(node);
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  return false;
}

/** Parses the text of a groups file (YAML or JSON) without anchors or aliases. */
export function parseGroupsText(text: string, file: string): unknown {
  let document: unknown;
  try {
    document = yaml.load(text, { filename: file, schema: yaml.JSON_SCHEMA, listener: refuseAnchors as (eventType: string, state: unknown) => void });
  } catch (error) {
    if (error instanceof AnchorRefused) throw new UsageError(`${file}: ${error.message}`);
    throw new UsageError(`${file}: not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  if (findSharedNode(document)) throw new UsageError(`${file}: YAML anchors and aliases are not accepted; write each value out`);
  return document;
}

/** Reads and validates a groups file; every problem names the file and the entry. */
export function readGroupsFile(file: string): GroupSpec[] {
  let text: string;
  try {
    // Symlinks are refused: git commits them, and one may point at /dev/zero, a FIFO or a file outside the checkout.
    text = readRegularFile(file, MAX_GROUPS_FILE_BYTES, "groups file").toString("utf8");
  } catch (error) {
    if (error instanceof FileRefusedError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
  const document = parseGroupsText(text, file);
  const parsed = groupsDocumentSchema.safeParse(document);
  if (!parsed.success) {
    // A misspelt "groups:" is named with the fix.
    const keys = document !== null && typeof document === "object" && !Array.isArray(document) ? Object.keys(document).filter((key) => key !== "groups") : [];
    const close = keys.find((key) => didYouMean(key, ["groups"]) !== undefined);
    const hint = close !== undefined ? ` (did you mean groups for ${quoteForMessage(close)}?)` : "";
    throw new UsageError(`${file}: must hold one object with a "groups" list, and nothing else${hint}`);
  }
  return validateGroups(parsed.data.groups, file);
}
