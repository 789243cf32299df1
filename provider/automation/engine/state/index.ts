// engine/state/: a stack's state as data. The only place the state is exported or
// imported (state-document.ts), the check that it holds only what this package
// writes (state-data.ts, CONTRACT F10), the `__provider` texts we write and their
// rewrite (provider-code.ts), and a preview answered from the state when it proves
// nothing would change (unchanged-state.ts).
export { KNOWN_PROVIDER_TEXTS, UntrustedProviderCodeError, type UntrustedResource, withOwnProviderCode } from "./provider-code";
export { assertStateIsData, checkedState, DYNAMIC_PROVIDER_TYPE, type StateProblem, stateProblems, UntrustedStateError } from "./state-data";
export { exportState, importState, knownSecretsKey, passphraseProofSecret, stackSecretsKey, type ImportStateOptions, isTornRead, readStateRetrying, readStateWithSecrets, SecretsNotReadableError, TORN_READ_WAITS_MS, tornStateError } from "./state-document";
export { PREVIEW_ENGINE_ENV, proveUnchanged, type StateProof } from "./unchanged-state";
