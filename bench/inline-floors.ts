// The floors as inline Automation API programs (the engine-vs-floor part writes
// the same two kinds as programs on disk: programSource there): no-op dynamic
// resources whose provider answers at once, so that their runs cost only what
// the engine, the backend and the dynamic-provider process charge. Used where
// ours runs through the library (provisionUserGroups, UserGroupFleet), so that
// the floor runs the same way: an inline program in this process.
import * as pulumi from "@pulumi/pulumi";

/** The two floors: plain no-op resources, and ones of a UserGroup's shape (the same outputs, the token secret). */
export type FloorKind = "floor" | "floor-shaped";

/** The type token of every no-op resource (pulumi.dynamic.Resource's). */
export const FLOOR_TYPE = "pulumi-nodejs:dynamic:Resource";

export interface FloorSpec {
  readonly name: string;
  readonly userGroupId: string;
  readonly mapping?: Record<string, string>;
  readonly adoptExisting?: boolean;
}

const plainNoop: pulumi.dynamic.ResourceProvider = {
  async create(inputs) {
    return { id: String(inputs.userGroupId), outs: inputs };
  },
};

const shapedNoop: pulumi.dynamic.ResourceProvider = {
  async create(inputs) {
    const id = String(inputs.userGroupId);
    return { id, outs: { ...inputs, token: id.padStart(64, "0"), teamId: 1, providedId: id, apiEnvironmentTag: "Customer" } };
  },
};

class FloorNoop extends pulumi.dynamic.Resource {}

/** A program declaring one no-op resource per spec, named by its userGroupId. */
export function declareFloor(kind: FloorKind, specs: readonly FloorSpec[]): () => Promise<void> {
  return async () => {
    for (const spec of specs) {
      const inputs = { name: spec.name, userGroupId: spec.userGroupId, mapping: spec.mapping ?? {}, ...(spec.adoptExisting !== undefined ? { adoptExisting: spec.adoptExisting } : {}) };
      if (kind === "floor") new FloorNoop(plainNoop, spec.userGroupId, inputs);
      else
        new FloorNoop(
          shapedNoop,
          spec.userGroupId,
          { ...inputs, token: undefined, teamId: undefined, providedId: undefined, apiEnvironmentTag: undefined },
          { additionalSecretOutputs: ["token"] },
        );
    }
  };
}
