// The conformance kit: the contract's checks against any target (docs/testing.md).
export { CHECKS, type Check, type CheckContext, type CheckMode, type Facts, type FactValue } from "./checks";
export { readFixture, writeFixture, type Fixture } from "./fixture";
export { DEFAULT_LEDGER } from "./ledger";
export {
  DEFAULT_PACE,
  DEFAULT_PREFIX,
  DOCUMENTED_RATE_LIMIT,
  formatDisagreements,
  PREFIX_PATTERN,
  runConformance,
  sweepConformance,
  type CheckResult,
  type ConformanceOptions,
  type ConformanceReport,
  type Disagreement,
  type SweepOptions,
} from "./runner";
export type { Answer, Pace, SendOptions } from "./session";
