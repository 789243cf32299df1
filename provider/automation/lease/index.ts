// lease/: the stack's run lease. Who may run on a stack now and the rules of the
// record beside the lease (dead runs' unfinished work, pending creates to adopt);
// its stores are the backends' (provider/backends/, leaseStoreFor).
export { type AdoptEntry, type CreatedEntry, classifyLockHolder, type Here, HERE, type LeaseStore, leaseRules, type RunClaim, RunLeaseHeldError, RunLeaseLostError, type RunRecord } from "./record";
export { acquireRunLease, leaseStoreFor, RUN_ID_ENV, type RunLease } from "./run-lease";
export { canonicalJson, checkCreatedEntries, createdProofKey, provenEntry, UnprovenRecordEntryError, unprovenWhy } from "./created-proof";
