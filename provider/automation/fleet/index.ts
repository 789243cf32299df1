// fleet/: UserGroupFleet, groups on demand from a service: batching, per-group
// outcomes, the fleet's view of its stack.
export { FleetClosedError, FleetEnsureError, FleetGroupError, FleetStackError } from "./errors";
export { type FleetOptions, UserGroupFleet } from "./fleet";
export { type FleetGroup } from "./fleet-state";
export { FLEET_MARKER_OUTPUT, isFleetStack } from "./fleet-stack";
/** @internal record-first sign-ups (sign-ups.ts): the benches' and tests' way in, not public API. */
export { fastPathFleet, slowPathFleet } from "./fleet";
export { adoptionPlan, createdEntryOf, engineSignUpSeam, type HeldShard, type SignUpSeam, SignUps } from "./sign-ups";
