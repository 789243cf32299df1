// engine/pulumi-cli/: the Pulumi CLI at our edge. Found and version-checked once
// per process (pulumi-command.ts; its version remembered per binary: known-version.ts), the trace and metrics options its engine
// commands get (engine-trace.ts), its errors in our words (engine-errors.ts), and
// runs that end when the engine ends (run-only.ts), a run's marks on its own commands only (run-marks.ts).
export { backendPlace, BackendUnreachableError, EngineEdgeError, type HintAudience, MissingPassphraseError, PulumiCliMissingError, PulumiCommandError, pulumiErrorLines, translateEngineError, WrongPassphraseError } from "./engine-errors";
export { ENGINE_OTEL_TRACES_ENV, engineTraceDestination, engineTraceOptions, type EngineTraceOptions } from "./engine-trace";
export { pulumiCommandOnPath } from "./pulumi-command";
export { runOnly } from "./run-only";
export { markWorkspace, outsideRuns, withRunMarks } from "./run-marks";
