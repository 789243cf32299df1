// pulumi-user-groups/automation: provision many groups from code.
export {
  destroyUserGroups,
  type GroupChange,
  type GroupEvent,
  type GroupResult,
  type Operation,
  previewUserGroups,
  type ProvisionOptions,
  provisionUserGroups,
  refreshUserGroups,
  type RunOptions,
  type RunResult,
  RunFailedError,
  type RunSummary,
  StackNotFoundError,
} from "./provision";
export { compareDrift, detectDrift, type DriftKind, type DriftOptions, type DriftReport, type GroupDrift } from "./drift";
export { formatDuration, parseDurationMs, StackLockedError, StackLockTimeoutError, withStackLockWait } from "./lock-wait";
export { type GroupSpec, groupSpecSchema, GroupsValidationError, type SpecProblem, validateGroups } from "./groups-spec";
export { type GroupIdentity, groupOfResourceName, resourceNameOf, ResourceNameError } from "./resource-name";
export { type PendingOperation, type RecoveryReport, recoverStack } from "./recover";
export { LiveLockError, type LockHolder, readLockHolders, removeStaleLocks } from "./stale-lock";
export { BackendTableNameError, RunLeaseLostError } from "./run-lease";
export type { TakeoverReport } from "./takeover";
export {
  type FleetGroup,
  FleetClosedError,
  FleetEnsureError,
  FleetGroupError,
  FleetStackError,
  isFleetStack,
  type FleetOptions,
  UserGroupFleet,
} from "./fleet";
export { UserGroupExistsError } from "../logic/operations";
export { UserGroupApiError } from "../client/errors";
export { UserGroupsError } from "../wire/errors";
export { assertValidStackName, InvalidStackNameError, isValidStackName } from "./stack-name";
export { UntrustedWorkspaceError } from "./workspace";
