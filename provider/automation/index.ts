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
  type RunSummary,
  StackLockedError,
} from "./provision";
export { type GroupSpec, groupSpecSchema, GroupsValidationError, resourceNameOf, type SpecProblem, validateGroups } from "./groups-spec";
export { type PendingOperation, type RecoveryReport, recoverStack } from "./recover";
export { LiveLockError, type LockHolder, readLockHolders, removeStaleLocks } from "./stale-lock";
export { assertValidStackName, InvalidStackNameError, isValidStackName } from "./stack-name";
export { UntrustedWorkspaceError } from "./workspace";
