// Public entry of `pulumi-user-groups/fake-server`.
export { startFakeServer, type FakeServer } from "./server.js";
export type { FakeServerOptions, LogSink } from "./options.js";
export type { ApiKeyConfig } from "./auth.js";
export { faultRuleSchema, FAULT_ACTIONS, type FaultRule, type FaultRuleInput } from "./faults.js";
export type { JournalEntry } from "./journal.js";
export type { StoredGroup } from "./store.js";
export { buildOpenApiDocument, openApiJson } from "./openapi.js";
