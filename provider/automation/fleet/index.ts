// fleet/: UserGroupFleet, groups on demand from a service: batching, per-group
// outcomes, the fleet's view of its stack.
export { FleetClosedError, FleetEnsureError, FleetGroupError, FleetStackError } from "./errors";
export { type FleetOptions, UserGroupFleet } from "./fleet";
export { type FleetGroup } from "./fleet-state";
export { FLEET_MARKER_OUTPUT, isFleetStack } from "./fleet-stack";
