// Reading a groups file, which is untrusted input: a pull request controls it.
// Everything is bounded before anything heavy runs: the file's size (stat
// before read), YAML anchors and aliases (refused: a few hundred bytes of
// nested aliases expand to hundreds of megabytes in any consumer), and each
// group's serialized properties (the wire's 1 MiB, groups-spec.ts). Every
// problem names the file and the entry.
import { readFileSync, statSync } from "node:fs";
import yaml from "js-yaml";
import { type GroupSpec, groupsDocumentSchema, validateGroups } from "../automation/groups-spec";
import { UserGroupsError } from "../wire/errors";
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
    const size = statSync(file).size;
    if (size > MAX_GROUPS_FILE_BYTES) {
      throw new UsageError(`${file}: ${size} bytes is over the limit of ${MAX_GROUPS_FILE_BYTES} bytes (16 MiB) for a groups file`);
    }
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  const parsed = groupsDocumentSchema.safeParse(parseGroupsText(text, file));
  if (!parsed.success) throw new UsageError(`${file}: must hold one object with a "groups" list, and nothing else`);
  return validateGroups(parsed.data.groups, file);
}
