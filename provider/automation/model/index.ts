// model/: what callers declare and get back. Group specs and their checks, resource
// and stack names, run options and results, the delete guard's rules. Pure: no
// Pulumi workspace, no file, no network.
export { assertDeletionsAllowed, type DeleteGuardOptions, DeletionRefusedError, heldGroupNames, validDeleteGuard } from "./delete-guard";
export { formatDuration, parseDurationMs } from "./duration";
export { groupsFileJsonSchema } from "./groups-json-schema";
export { type GroupSpec, GroupsValidationError, resourceNameOf, type SpecProblem, userGroupArgsOf, validateGroups } from "./groups-spec";
/** @internal zod schemas: left out of the declarations (tsconfig.build.json stripInternal). */
export { groupsDocumentSchema, groupSpecSchema } from "./groups-spec";
export { CONTROLS, type GroupIdentity, groupOfResourceName, nameOfUrn, ResourceNameError, urnOf } from "./resource-name";
export type { EnsuredGroup, FieldChange, GroupChange, GroupEvent, GroupResult, Operation, PendingOperation, ProvisionOptions, RunOptions, RunResult, RunSummary, TakeoverReport, PulumiLock } from "./results";
export { assertValidStackName, InvalidStackNameError, isValidStackName } from "../../backends";
