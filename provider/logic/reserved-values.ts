// Values Pulumi itself reserves cannot travel as plain data through a program's
// inputs (CONTRACT F6). The engine reads an object holding the signature key as
// an asset, archive, secret or resource reference (an asset's `uri` made the
// engine fetch a URL of the caller's choosing), and a string equal to the
// unknown marker as a value not known yet (dropped on `up`). A `__proto__` key
// would set an object's prototype instead of a key, and a lone surrogate is not
// Unicode text: Pulumi stores U+FFFD in its place, so the state would name
// another group. All are found here, before any schema walks the value (this
// walk uses an explicit stack and a depth bound: a deep value cannot overflow
// it, nor a recursive schema after it).
import { UserGroupsError } from "../wire/errors";
import { PROTO_KEY_REFUSED, quoteForMessage } from "../wire/issues";

/** The key of Pulumi's serialized special objects (asset, archive, secret, resource reference). */
export const SIGNATURE_KEY = "4dabf18193072939515e22adb298388d";

/** Pulumi's marker for a value not known until apply (preview of a computed input). */
export const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/**
 * Every string the engine reads as a value not known yet, by the type it stands
 * for (`Unknown*Value` in sdk/go/common/resource/plugin/rpc.go of pulumi/pulumi;
 * test/logic/unknown-values.test.ts reads them from there). The Node.js SDK
 * writes only the string one for a computed input; the engine turns any of the
 * seven, wherever it meets it, into an unknown and drops the value.
 */
export const UNKNOWN_VALUES: Readonly<Record<string, string>> = Object.freeze({
  "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7": "bool",
  "3eeb2bf0-c639-47a8-9e75-3b44932eb421": "number",
  [UNKNOWN_VALUE]: "string",
  "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2": "array",
  "030794c1-ac77-496b-92df-f27374a8bd58": "asset",
  "e48ece36-62e2-4504-bad9-02848725956a": "archive",
  "dd056dcd-154b-4c76-9bd3-c8f88648b5ff": "object",
});

function isUnknownMarker(value: string): boolean {
  return Object.prototype.hasOwnProperty.call(UNKNOWN_VALUES, value);
}

/** Deepest nesting accepted below an input (`properties: {}` is 1): far above any real use, far below what a recursive parser survives (~3000). */
export const MAX_INPUT_DEPTH = 256;

/** Problems reported per value at most: the first ones say enough. */
const MAX_PROBLEMS = 20;

/** A lone UTF-16 surrogate: not Unicode text, and not representable in UTF-8. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Keys written after a dot in a path; any other key is quoted in brackets. */
const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

export interface ReservedValueProblem {
  /** Where the value is, e.g. `properties.a.b[2]` or `mapping["sales team"]`. */
  readonly path: string;
  /** The whole sentence: the path, then why it is refused. */
  readonly message: string;
}

export interface ReservedValueOptions {
  /**
   * "pass": a string equal to the SDK's unknown marker (UNKNOWN_VALUE) is a
   * value still unknown (the provider's check during a preview of a computed
   * input); the engine's six other markers are refused, since no computed input
   * of a Node.js program is ever written as one. "refuse": plain data, where no
   * computed input can exist (a spec from a caller or a groups file): all seven
   * are refused.
   */
  readonly unknownValues: "pass" | "refuse";
  /** Objects not walked (a program's outputs and promises: their values are not known here). */
  readonly skip?: (value: object) => boolean;
}

function childPath(path: string, key: string): string {
  return PLAIN_KEY.test(key) ? `${path}.${key}` : `${path}[${quoteForMessage(key)}]`;
}

function stringProblem(value: string, path: string, options: ReservedValueOptions): string | undefined {
  if (isUnknownMarker(value) && (value !== UNKNOWN_VALUE || options.unknownValues === "refuse")) {
    return `${path} is Pulumi's unknown-value marker "${value}": Pulumi would read it as a value not known yet, not as data`;
  }
  if (LONE_SURROGATE.test(value)) return `${path} is not Unicode text (it holds a lone surrogate): Pulumi would store U+FFFD in its place`;
  return undefined;
}

function keyProblem(key: string, objectPath: string): string | undefined {
  if (key === "__proto__") return `${objectPath}.__proto__ ${PROTO_KEY_REFUSED}`;
  if (key === SIGNATURE_KEY) {
    return `${objectPath} holds the key "${SIGNATURE_KEY}", which Pulumi reserves: it would read this object as an asset, archive, secret or resource reference, not as data`;
  }
  if (isUnknownMarker(key)) return `${objectPath} holds the key "${key}", Pulumi's unknown-value marker, which Pulumi reserves`;
  if (LONE_SURROGATE.test(key)) return `${childPath(objectPath, key)} is a key that is not Unicode text (it holds a lone surrogate): Pulumi would store U+FFFD in its place`;
  return undefined;
}

/**
 * A value Pulumi reserves met by the provider itself (reservedValuesOf): in
 * the inputs of a create or an update, where no value can still be unknown,
 * or in a diff's. Nothing is sent to the service.
 */
export class ReservedValueError extends UserGroupsError {
  constructor(
    readonly operation: "diff" | "create" | "update",
    readonly userGroupId: string | undefined,
    readonly problems: readonly ReservedValueProblem[],
  ) {
    const group = userGroupId === undefined ? "UserGroup" : `UserGroup ${quoteForMessage(userGroupId)}`;
    super("reserved_value", `${group}, ${operation}: ${problems.map((problem) => problem.message).join("; ")}. Nothing was sent to the service.`);
    this.name = "ReservedValueError";
  }
}

/**
 * Every reserved value in `inputs` (each field walked to any depth, arrays
 * included), in document order, at most 20. An object met twice (shared, or a
 * cycle) is walked once.
 */
export function reservedValueProblems(inputs: Readonly<Record<string, unknown>>, options: ReservedValueOptions): ReservedValueProblem[] {
  return walk(Object.keys(inputs).map((field) => ({ value: inputs[field], path: field, depth: 0 })), options);
}

/**
 * Every reserved value in one value that sits at `path` of a UserGroup's
 * inputs (e.g. an output's resolved value at `properties.nested`), its own
 * depth counted from there.
 */
export function reservedValueProblemsAt(value: unknown, path: string, depth: number, options: ReservedValueOptions): ReservedValueProblem[] {
  return walk([{ value, path, depth }], options);
}

function walk(roots: ReadonlyArray<{ value: unknown; path: string; depth: number }>, options: ReservedValueOptions): ReservedValueProblem[] {
  const problems: ReservedValueProblem[] = [];
  const seen = new Set<object>();
  const stack = [...roots].reverse();
  while (stack.length > 0 && problems.length < MAX_PROBLEMS) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === "string") {
      const message = stringProblem(value, path, options);
      if (message !== undefined) problems.push({ path, message });
      continue;
    }
    if (value === null || typeof value !== "object" || seen.has(value) || options.skip?.(value) === true) continue;
    seen.add(value);
    if (depth >= MAX_INPUT_DEPTH) {
      problems.push({ path, message: `${path} is nested deeper than ${MAX_INPUT_DEPTH} levels` });
      continue;
    }
    const children: Array<{ value: unknown; path: string; depth: number }> = [];
    if (Array.isArray(value)) {
      value.forEach((item, index) => children.push({ value: item, path: `${path}[${index}]`, depth: depth + 1 }));
    } else {
      for (const key of Object.keys(value)) {
        const message = keyProblem(key, path);
        if (message !== undefined) {
          problems.push({ path: childPath(path, key), message });
          continue;
        }
        children.push({ value: (value as Record<string, unknown>)[key], path: childPath(path, key), depth: depth + 1 });
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return problems;
}

/**
 * A copy of `inputs` in which each value `isDeferred` picks (a program's
 * outputs and promises), at any depth of plain objects and arrays, is replaced
 * by `replace(value, path, depth)`; what holds none is returned as it is (the
 * same object). Other objects (class instances) are not entered. The walk is
 * bounded as reservedValueProblems' is, and an object met twice is mapped once.
 */
export function mapDeferredValues(
  inputs: Readonly<Record<string, unknown>>,
  isDeferred: (value: object) => boolean,
  replace: (value: object, path: string, depth: number) => unknown,
): Record<string, unknown> {
  const mapped = new Map<object, unknown>();
  const visit = (value: unknown, path: string, depth: number): unknown => {
    if (value === null || typeof value !== "object") return value;
    if (isDeferred(value)) return replace(value, path, depth);
    const known = mapped.get(value);
    if (known !== undefined || mapped.has(value)) return known;
    const prototype: unknown = Object.getPrototypeOf(value);
    if (depth >= MAX_INPUT_DEPTH || !(Array.isArray(value) || prototype === Object.prototype || prototype === null)) return value;
    mapped.set(value, value); // while it is walked: a cycle back to it keeps the original
    let changed = false;
    let copy: unknown;
    if (Array.isArray(value)) {
      const items = value.map((item: unknown, index) => {
        const next = visit(item, `${path}[${index}]`, depth + 1);
        changed ||= next !== item;
        return next;
      });
      copy = items;
    } else {
      const members: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        const item = (value as Record<string, unknown>)[key];
        const next = visit(item, childPath(path, key), depth + 1);
        changed ||= next !== item;
        members[key] = next;
      }
      copy = members;
    }
    const result = changed ? copy : value;
    mapped.set(value, result);
    return result;
  };
  const result: Record<string, unknown> = {};
  for (const field of Object.keys(inputs)) result[field] = visit(inputs[field], field, 0);
  return result;
}
