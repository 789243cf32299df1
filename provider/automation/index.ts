/**
 * Provisioning from code: `provisionUserGroups` and friends declare a stack's whole set
 * of groups; `UserGroupFleet` adds or changes groups on demand, from services; recovery,
 * drift and the groups-file checks the `user-groups` command uses.
 * @module pulumi-user-groups/automation
 */
import { type GroupSpec, groupSpecSchema as groupSpecZodSchema } from "./groups-spec";
import type { Validator } from "../wire/schemas";

export {
  destroyUserGroups,
  type EnsuredGroup,
  type GroupChange,
  type GroupEvent,
  type DeleteGuardOptions,
  type FieldChange,
  type GroupResult,
  type Operation,
  OutsideBatchError,
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
export {
  BackendUnreachableError,
  EngineEdgeError,
  type HintAudience,
  MissingPassphraseError,
  PulumiCliMissingError,
  PulumiCommandError,
  WrongPassphraseError,
} from "./engine-errors";
export {
  compareDrift,
  detectDrift,
  type DriftKind,
  type DriftOptions,
  type DriftReport,
  type GroupDrift,
  type ServiceGroup,
  type StateGroup,
} from "./drift";
export { formatDuration, type LockWaitOptions, parseDurationMs, StackLockedError, StackLockTimeoutError, withStackLockWait } from "./lock-wait";
export { type GroupSpec, GroupsValidationError, type SpecProblem, validateGroups } from "./groups-spec";
export { type GroupIdentity, groupOfResourceName, resourceNameOf, ResourceNameError } from "./resource-name";
export { type PendingOperation, type RecoveryReport, recoverStack } from "./recover";
export { LiveLockError, type LockHolder, readLockHolders, removeStaleLocks } from "./stale-lock";
export { BackendTableNameError, type PulumiLock, RunLeaseLostError } from "./run-lease";
export type { TakeoverReport } from "./takeover";
export type { RegularFileProblem } from "./regular-file";
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
export { MissingCredentialsError } from "../logic/credentials";
export { UserGroupApiError } from "../client/errors";
export { UserGroupsError } from "../wire/errors";
export { assertValidStackName, InvalidStackNameError, isValidStackName } from "./stack-name";
export { DEFAULT_SHARD_SIZE, ReservedStackNameError, ShardNameError } from "./shard-directory";
export { UntrustedWorkspaceError } from "./workspace";
export type { UserGroupInputs } from "../logic/inputs";
export type { Environment, JsonValue, Mapping, Properties, Validator } from "../wire/schemas";

/** Checks one group spec as validateGroups does for each entry (its type leaves zod out of the package's declarations). */
export const groupSpecSchema: Validator<GroupSpec> = groupSpecZodSchema;
export { DeletionRefusedError } from "./delete-guard";
export { FileRefusedError } from "./regular-file";
