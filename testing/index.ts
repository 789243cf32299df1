/**
 * Testing a program that declares UserGroups, without the real service: one call gives a
 * stack of your program against the emulator (a namespace of its own, a private backend,
 * the engine's environment), runs it through the Automation API, and shows what it sent.
 * Also the emulator for parallel tests, request assertions, unit-test mocks, and the
 * conformance kit's checks. See docs/testing.md.
 * @module pulumi-user-groups/testing
 */
export { createStackDirectory, DEFAULT_WORK_ROOT, type StackDirectory, type StackDirectoryOptions } from "./environment.js";
export { createTestStack, type RunResult, type TestStack, type TestStackOptions } from "./stack.js";
export {
  emulatorOf,
  EMULATOR_ADMIN_TOKEN_ENV,
  EMULATOR_URL_ENV,
  startEmulator,
  type StartEmulatorOptions,
  type TestEmulator,
  type TestNamespace,
  type TestNamespaceOptions,
} from "./emulator.js";
export { expectRequests, findRequests, RequestsNotAsExpectedError, type RequestCount, type RequestQuery } from "./requests.js";
export { trackChanges, type ChangeCounts } from "./changes.js";
export { userGroupMocks, type MockedUserGroup, type UserGroupMocksOptions } from "./mocks.js";
export type { ApiKeyConfig, Environment, FakeServer, FakeServerOptions, FaultRuleInput, JournalEntry, SeedGroup, StoredGroup } from "../fake-server/index.js";
export {
  CHECKS,
  DEFAULT_PACE,
  DEFAULT_PREFIX,
  DOCUMENTED_RATE_LIMIT,
  formatDisagreements,
  readFixture,
  runConformance,
  sweepConformance,
  writeFixture,
  type Check,
  type CheckContext,
  type CheckMode,
  type CheckResult,
  type ConformanceOptions,
  type ConformanceReport,
  type Disagreement,
  type Facts,
  type FactValue,
  type Fixture,
  type Pace,
  type SendOptions,
  type Answer,
  type SweepOptions,
} from "../provider/conformance/index.js";
