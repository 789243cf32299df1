// telemetry/: the automation layer's metrics and span helpers (the lowest
// automation folder: every other one may use it; it uses none of them).
export {
  automationInstruments,
  tracer as automationTracer,
  currentLeaseWait,
  errorTypeOf,
  failSpan,
  holderKind,
  inSpan,
  LeaseWait,
  setSpanAttributes,
  type SpanOptions,
} from "./telemetry";
