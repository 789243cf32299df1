// The groups a stack holds, read from its exported state (engine/state-document.ts
// readStateWithSecrets): no engine run, no API request. Secrets come decrypted
// in this process's memory, as Pulumi's secret envelope with a `plaintext` JSON text.
import type { Deployment } from "@pulumi/pulumi/automation";
import { userGroupInputsSchema, userGroupOutputsSchema } from "../../logic/inputs";
import { SIGNATURE_KEY } from "../../logic/reserved-values";
import type { Environment, Mapping, Properties } from "../../wire/schemas";
import { USER_GROUP_TYPE } from "../../resource/user-group";
import { nameOfUrn } from "../model";

/** One group as the stack holds it. */
export interface FleetGroup {
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly profile?: string;
  readonly name: string;
  readonly mapping: Mapping;
  readonly properties?: Properties;
  readonly rotationTrigger?: string;
  /** The group's token: yours to keep secret. */
  readonly token: string;
  readonly teamId: number;
  readonly apiEnvironmentTag?: Environment;
}

/** A secret envelope's plain value (readStateWithSecrets), or the value itself. */
function revealed(value: unknown): unknown {
  if (value !== null && typeof value === "object" && SIGNATURE_KEY in value) {
    const plaintext = (value as { plaintext?: unknown }).plaintext;
    return typeof plaintext === "string" ? (JSON.parse(plaintext) as unknown) : undefined;
  }
  return value;
}

/** The outputs a group's state holds, tolerant of a state without mapping or with null properties. */
const heldOutputsSchema = userGroupOutputsSchema
  .pick({ name: true, userGroupId: true, rotationTrigger: true, profile: true, token: true, teamId: true, apiEnvironmentTag: true })
  .extend({ mapping: userGroupInputsSchema.shape.mapping, properties: userGroupInputsSchema.shape.properties });

interface StateResource {
  readonly urn?: unknown;
  readonly type?: unknown;
  readonly outputs?: unknown;
  readonly delete?: unknown;
}

/** Every UserGroup the deployment holds (a replacement's old half excluded), sorted by resource name. */
export function groupsInState(deployment: Deployment): FleetGroup[] {
  const resources = ((deployment.deployment as { resources?: StateResource[] } | undefined)?.resources ?? []) as StateResource[];
  const groups: FleetGroup[] = [];
  for (const resource of resources) {
    if (resource.type !== USER_GROUP_TYPE || resource.delete === true || typeof resource.urn !== "string") continue;
    const raw = resource.outputs !== null && typeof resource.outputs === "object" ? (resource.outputs as Record<string, unknown>) : {};
    const parsed = heldOutputsSchema.safeParse({ ...raw, token: revealed(raw.token) });
    if (!parsed.success) continue; // e.g. a group whose create never finished: the engine has no outputs for it
    const outputs = parsed.data;
    groups.push({
      resourceName: nameOfUrn(resource.urn),
      userGroupId: outputs.userGroupId,
      ...(outputs.profile !== undefined ? { profile: outputs.profile } : {}),
      name: outputs.name,
      mapping: outputs.mapping ?? {},
      ...(outputs.properties !== undefined && outputs.properties !== null ? { properties: outputs.properties } : {}),
      ...(outputs.rotationTrigger !== undefined ? { rotationTrigger: outputs.rotationTrigger } : {}),
      token: outputs.token,
      teamId: outputs.teamId,
      ...(outputs.apiEnvironmentTag !== undefined ? { apiEnvironmentTag: outputs.apiEnvironmentTag } : {}),
    });
  }
  return groups.sort((a, b) => (a.resourceName < b.resourceName ? -1 : a.resourceName > b.resourceName ? 1 : 0));
}

/** Does the deployment carry the fleet's marker output on its root stack resource? */
export function isFleetDeployment(deployment: Deployment, markerOutput: string): boolean {
  const resources = ((deployment.deployment as { resources?: StateResource[] } | undefined)?.resources ?? []) as StateResource[];
  const root = resources.find((r) => r.type === "pulumi:pulumi:Stack");
  const outputs = root?.outputs !== null && typeof root?.outputs === "object" ? (root.outputs as Record<string, unknown>) : {};
  return outputs[markerOutput] === true;
}
