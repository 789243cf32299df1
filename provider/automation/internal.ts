// The entry point of this package's own command (cli/) and the repository's
// benches and scripts: the public API (index.ts) and the few internals they need
// beyond it. Not in package.json's exports.
export * from "./index";
export { backendNotice, backendUrlSecrets, lockHolderStatus, type LockHolderStatus, readRegularFile, writeFileReplacing } from "./backend";
export { PREVIEW_ENGINE_ENV, PROJECT_NAME, secretValuesOf, selectStack, workspaceOf } from "./engine";
export { RunLeaseHeldError, type RunRecord } from "./lease";
/** The automation layers' telemetry helpers, for the benchmark's cost of tracing off and on (bench/observability.ts). */
export { engineRun } from "./engine";
export { inSpan, LeaseWait } from "./telemetry";
export { assertDeletionsAllowed, CONTROLS, groupsFileJsonSchema, nameOfUrn } from "./model";
/** @internal a zod schema: left out of the declarations. */
export { groupsDocumentSchema } from "./model";
/** @internal Record-first sign-ups (fleet/sign-ups/: not the default yet, no public option), and the engine-run path (the default) by name, for the benches. */
export { fastPathFleet, slowPathFleet } from "./fleet";
