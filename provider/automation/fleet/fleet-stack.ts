// Whether a stack is a fleet's: the marker output the GitOps CLI looks for.
import { isFleetDeployment } from "./fleet-state";
import { type RunOptions } from "../model";
import { exportIfExists } from "../engine";

/** The stack output that marks a fleet's stack (the GitOps CLI refuses whole-set runs on it). */
export const FLEET_MARKER_OUTPUT = "userGroupsFleet";

/** Is the stack of these options a fleet's (it carries the fleet's marker output)? A stack that does not exist yet is not, and is not made by asking. */
export async function isFleetStack(options: RunOptions): Promise<boolean> {
  const deployment = await exportIfExists(options);
  return deployment !== undefined && isFleetDeployment(deployment, FLEET_MARKER_OUTPUT);
}
