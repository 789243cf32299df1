/**
 * Provisioning from code: `provisionUserGroups` and friends declare a stack's whole set
 * of groups; `UserGroupFleet` adds or changes groups on demand, from services; recovery,
 * drift and the groups-file checks the `user-groups` command uses.
 * @module pulumi-user-groups/automation
 */
import { type GroupSpec, groupSpecSchema as groupSpecZodSchema } from "./model";
import type { Validator } from "../wire/schemas";

// Whole-set runs, recovery and drift (operations/).
export {
  compareDrift,
  destroyUserGroups,
  detectDrift,
  type DriftKind,
  type DriftOptions,
  type DriftReport,
  type GroupDrift,
  type PendingOperation,
  previewUserGroups,
  provisionUserGroups,
  type RecoverOptions,
  recoverStack,
  type RecoveryReport,
  refreshUserGroups,
  type ServiceGroup,
  type StateGroup,
} from "./operations";

// Groups on demand (fleet/).
export { type FleetGroup, FleetClosedError, FleetEnsureError, FleetGroupError, type FleetOptions, FleetStackError, isFleetStack, UserGroupFleet } from "./fleet";

// What callers declare and get back (model/).
export {
  assertValidStackName,
  type DeleteGuardOptions,
  DeletionRefusedError,
  type EnsuredGroup,
  type FieldChange,
  formatDuration,
  type GroupChange,
  type GroupEvent,
  type GroupIdentity,
  groupOfResourceName,
  type GroupResult,
  type GroupSpec,
  GroupsValidationError,
  InvalidStackNameError,
  isValidStackName,
  type Operation,
  parseDurationMs,
  type ProvisionOptions,
  type PulumiLock,
  resourceNameOf,
  ResourceNameError,
  type RunOptions,
  type RunResult,
  type RunSummary,
  type SpecProblem,
  type TakeoverReport,
  validateGroups,
} from "./model";

// Errors of one run at the engine's edge (engine/), Pulumi's locks and files (backend/), leases and shards.
export {
  BackendUnreachableError,
  EngineEdgeError,
  type HintAudience,
  MissingPassphraseError,
  OutsideBatchError,
  PulumiCliMissingError,
  PulumiCommandError,
  RunFailedError,
  type StateProblem,
  StackNotFoundError,
  UntrustedProviderCodeError,
  type UntrustedResource,
  UntrustedStateError,
  UntrustedWorkspaceError,
  WrongPassphraseError,
} from "./engine";
export {
  FileRefusedError,
  LiveLockError,
  type LockHolder,
  type LockWaitOptions,
  readLockHolders,
  type RegularFileProblem,
  removeStaleLocks,
  StackLockedError,
  StackLockTimeoutError,
  withStackLockWait,
} from "./backend";
export { RunLeaseLostError } from "./lease";
export { DEFAULT_SHARD_SIZE, ReservedStackNameError, ShardNameError } from "./shards";

// From the layers below.
export { BackendTableNameError } from "../backends";
export { UserGroupApiError } from "../client/errors";
export { BaseUrlNotAllowedError, MissingCredentialsError } from "../logic/credentials";
export { UserGroupExistsError } from "../logic/operations";
export type { UserGroupInputs } from "../logic/inputs";
export { UserGroupsError } from "../wire/errors";
export type { Clock } from "../clock";
export { ERROR_CODES, type ErrorCode, type ErrorCodeEntry, type ForeignErrorCode, isErrorCode } from "../wire/error-codes";
export type { Environment, JsonValue, Mapping, Properties, Validator } from "../wire/schemas";

/** Checks one group spec as validateGroups does for each entry (its type leaves zod out of the package's declarations). */
export const groupSpecSchema: Validator<GroupSpec> = groupSpecZodSchema;
