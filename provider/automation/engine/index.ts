// engine/: one stack, one run. The work directory and workspace, the inline
// program, change tracking, stack config, the takeover of a dead run
// (underRunLease), and runDeclared (a run of a whole set; shards/run-shard.ts holds
// its lease). Two sub-folders: state/ (the state as data: its document, its check,
// the provider code, a preview answered from it) and pulumi-cli/ (the CLI, its
// trace options, its errors in our words).
export { assertWithinBatch, ChangeTracker, OutsideBatchError, RunFailedError } from "./change-tracker";
export { backendPlace, BackendUnreachableError, EngineEdgeError, type HintAudience, MissingPassphraseError, PulumiCliMissingError, PulumiCommandError, WrongPassphraseError } from "./pulumi-cli";
export { exportIfExists, openStack, runError, type SelectedStack, selectStack, StackNotFoundError, withLockWait, workspaceOf } from "./open-stack";
export { declareGroup, noteResolved, programFor, type ResolvedGroup } from "./program";
export { ENGINE_OTEL_TRACES_ENV, engineTraceDestination, engineTraceOptions, type EngineTraceOptions, runOnly } from "./pulumi-cli";
export { type DeclaredRunPlace, runDeclared, runFailure } from "./run-once";
export { secretValuesOf } from "./stack-config";
export { adoptCreated, markRun, pendingCreatesOf, pendingOf, stopLostRun, takeOver, underRunLease, underRunMarks } from "./takeover";
export { outsideRuns } from "./pulumi-cli";
export { createdEntryOf, proofKeyOf, provenCreated } from "./created-entries";
export { checkpointFreePlan, hasIntents, runConfigLookup, SKIP_CHECKPOINTS_ENV } from "./intents";
export { type EngineOperation, engineRun } from "./run-telemetry";
export { PROJECT_NAME, UntrustedWorkspaceError } from "./workspace";
export { KNOWN_PROVIDER_TEXTS, PREVIEW_ENGINE_ENV, UntrustedProviderCodeError, type UntrustedResource, withOwnProviderCode } from "./state";
// assertOwnProviderCode: the earlier name of assertStateIsData (it checked `__provider` only), kept for its callers.
export { assertStateIsData, assertStateIsData as assertOwnProviderCode, checkedState, DYNAMIC_PROVIDER_TYPE, type StateProblem, stateProblems, UntrustedStateError } from "./state";
export { exportState, importState, knownSecretsKey, passphraseProofSecret, stackSecretsKey, type ImportStateOptions, readStateWithSecrets, SecretsNotReadableError } from "./state";
