// operations/: what a library user or the CLI asks of a whole stack: provision,
// preview, refresh, destroy, recover and drift.
export { compareDrift, detectDrift, type DriftKind, type DriftOptions, type DriftReport, type GroupDrift, type ServiceGroup, type StateGroup } from "./drift";
export { destroyUserGroups, previewUserGroups, provisionUserGroups, refreshUserGroups } from "./provision";
export { type PendingOperation, type RecoverOptions, recoverStack, type RecoveryReport } from "./recover";
