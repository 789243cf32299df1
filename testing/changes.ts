// What a run did to the UserGroup resources, counted from the engine's events
// (the stack itself and the default provider are not counted).
import type { EngineEvent } from "@pulumi/pulumi/automation";

/** How many groups each operation touched. */
export interface ChangeCounts {
  create?: number;
  update?: number;
  replace?: number;
  delete?: number;
  same?: number;
  read?: number;
  refresh?: number;
}

const GROUP_TYPE_SUFFIX = ":UserGroup";

/** Follows a run's engine events: the operation of each group (a replacement counts once, as `replace`). */
export function trackChanges(): { onEvent: (event: EngineEvent) => void; counts: () => ChangeCounts } {
  const ops = new Map<string, string>();
  const onEvent = (event: EngineEvent): void => {
    const meta = event.resourcePreEvent?.metadata;
    if (!meta || !meta.type.endsWith(GROUP_TYPE_SUFFIX)) return;
    const op = meta.op === "create-replacement" || meta.op === "delete-replaced" || meta.op === "replace" ? "replace" : meta.op;
    if (ops.get(meta.urn) !== "replace") ops.set(meta.urn, op);
  };
  const counts = (): ChangeCounts => {
    const out: Record<string, number> = {};
    for (const op of ops.values()) out[op] = (out[op] ?? 0) + 1;
    return out as ChangeCounts;
  };
  return { onEvent, counts };
}
