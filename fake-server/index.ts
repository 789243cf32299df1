/**
 * The local emulator of `/api/user`, in process: `startFakeServer`, its options, fault
 * rules and the OpenAPI document.
 * @module pulumi-user-groups/fake-server
 */
import type { Validator } from "../provider/wire/schemas.js";
import { type FaultRule, faultRuleSchema as faultRuleZodSchema } from "./faults.js";

export { startFakeServer, type FakeServer, type FakeServerNamespace } from "./server.js";
export type { NamespaceOptions } from "./namespaces.js";
export type { SeedGroup } from "./seed.js";
export type { FakeServerOptions, LogSink } from "./options.js";
export type { ApiKeyConfig } from "./auth.js";
export {
  FAULT_ACTIONS,
  type DelayFaultRule,
  type DropAfterApplyFaultRule,
  type FaultRule,
  type FaultRuleBase,
  type FaultRuleInput,
  type ResetFaultRule,
  type StatusFaultRule,
} from "./faults.js";
export type { JournalEntry } from "./journal.js";
export type { StoredGroup } from "./store.js";
export type { ApiMethod, Environment, JsonValue, Mapping, Properties, Validator } from "../provider/wire/schemas.js";
export { buildOpenApiDocument, type JsonSchema, openApiJson } from "./openapi.js";
export type { ConnectionStats } from "./connections.js";

/** Checks one fault rule as `POST /__admin/faults` does (its type leaves zod out of the package's declarations). */
export const faultRuleSchema: Validator<FaultRule> = faultRuleZodSchema;
