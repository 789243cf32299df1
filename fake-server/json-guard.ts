// Hazards in a parsed JSON body that the zod schemas cannot be trusted with:
// nesting so deep that a recursive walk overflows the stack (a 200k-deep
// `properties` once gave a 500 and broke the journal), and `__proto__` keys,
// which an object built by assignment drops silently. Found with an explicit
// stack, never recursion.
import type { JsonValue } from "../provider/wire/schemas.js";

/** The deepest a body may nest below its top-level object (`properties: {}` is 1). */
export const MAX_JSON_DEPTH = 64;

export interface JsonHazard {
  readonly kind: "too_deep" | "proto_key";
  /** The top-level field it is under. */
  readonly field: string;
}

/**
 * The first hazard under `body`'s fields, or undefined. `protoFields` lists the fields where a
 * `__proto__` key is refused; with `onlyFields`, other fields are not looked at (an API body's
 * unknown fields are ignored, and nothing walks them).
 */
export function findJsonHazard(
  body: { [key: string]: JsonValue },
  protoFields: ReadonlySet<string>,
  onlyFields?: ReadonlySet<string>,
): JsonHazard | undefined {
  for (const [field, value] of Object.entries(body)) {
    if (onlyFields !== undefined && !onlyFields.has(field)) continue;
    const checkProto = protoFields.has(field);
    const stack: Array<{ value: JsonValue; depth: number }> = [{ value, depth: 1 }];
    while (stack.length > 0) {
      const { value: current, depth } = stack.pop()!;
      if (current === null || typeof current !== "object") continue;
      if (depth > MAX_JSON_DEPTH) return { kind: "too_deep", field };
      if (Array.isArray(current)) {
        for (const item of current) if (item !== null && typeof item === "object") stack.push({ value: item, depth: depth + 1 });
        continue;
      }
      for (const key of Object.keys(current)) {
        if (checkProto && key === "__proto__") return { kind: "proto_key", field };
        const item = current[key]!;
        if (item !== null && typeof item === "object") stack.push({ value: item, depth: depth + 1 });
      }
    }
  }
  return undefined;
}
