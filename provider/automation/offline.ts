// The entry point of what the `user-groups` command needs before any engine run:
// its arguments' checks (stack names, durations, a backend URL's secrets), the
// groups file's read and validation, and the names its output prints. Nothing here
// loads @pulumi/pulumi, a backend's client or the OpenTelemetry SDK, so `--help`,
// `validate` and the refusal of a bad groups file start in a fraction of the time an
// engine command takes (test/cli/cli-start.test.ts holds that). Not in package.json's
// exports: the CLI loads internal.ts, the full entry, only when an engine run starts.
export { backendUrlSecrets, FileRefusedError, readRegularFile } from "./backend";
export { CONTROLS, type GroupSpec, isValidStackName, parseDurationMs, resourceNameOf, validateGroups } from "./model";
export type { FieldChange, GroupResult, Operation, RunResult } from "./model";
/** @internal a zod schema: left out of the declarations. */
export { groupsDocumentSchema } from "./model";
