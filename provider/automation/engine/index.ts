// engine/: one stack, one run. The work directory and workspace, the inline
// program, change tracking, Pulumi's errors in our words, stack config, the
// takeover of a dead run (underRunLease), a preview answered from the state,
// and runDeclared (a run of a whole set; shards/run-shard.ts holds its lease).
export { assertWithinBatch, ChangeTracker, OutsideBatchError, RunFailedError } from "./change-tracker";
export { backendPlace, BackendUnreachableError, EngineEdgeError, type HintAudience, MissingPassphraseError, PulumiCliMissingError, PulumiCommandError, WrongPassphraseError } from "./engine-errors";
export { exportIfExists, openStack, runError, type SelectedStack, selectStack, StackNotFoundError, withLockWait, workspaceOf } from "./open-stack";
export { declareGroup } from "./program";
export { ENGINE_OTEL_TRACES_ENV, engineTraceDestination, engineTraceOptions, type EngineTraceOptions } from "./engine-trace";
export { type DeclaredRunPlace, runDeclared, runFailure } from "./run-once";
export { scrubSecrets, scrubText, secretValuesOf } from "./stack-config";
export { markRun, pendingCreatesOf, pendingOf, takeOver, underRunLease } from "./takeover";
export { type EngineOperation, engineRun } from "./run-telemetry";
export { PREVIEW_ENGINE_ENV } from "./unchanged-state";
export { PROJECT_NAME, UntrustedWorkspaceError } from "./workspace";
export { KNOWN_PROVIDER_TEXTS, UntrustedProviderCodeError, type UntrustedResource, withOwnProviderCode } from "./provider-code";
// assertOwnProviderCode: the earlier name of assertStateIsData (it checked `__provider` only), kept for its callers.
export { assertStateIsData, assertStateIsData as assertOwnProviderCode, checkedState, DYNAMIC_PROVIDER_TYPE, type StateProblem, stateProblems, UntrustedStateError } from "./state-data";
export { exportState, importState, type ImportStateOptions, readStateWithSecrets, SecretsNotReadableError } from "./state-document";
