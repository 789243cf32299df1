// Each fleet call's trace and measurements (docs/observability.md, "What is
// traced"): its span from the call to its answer, and the batch span that runs
// it (parented by the batch's first call, linked with every other).
import { type Context, context, type Link, type Span, trace } from "@opentelemetry/api";
import { automationInstruments, automationTracer, failSpan, inSpan, setSpanAttributes } from "../telemetry";
import type { Request } from "./requests";

/**
 * One call's trace: its span, started when the call is made, as a child of the
 * caller's active span (a service's HTTP handler), and ended when the call is
 * answered; the context it was made in, which parents its batch's span when it
 * is the batch's first call.
 */
export interface CallTrace {
  readonly operation: "ensure" | "remove";
  readonly span: Span;
  readonly parent: Context;
  readonly enqueued: number;
  queuedMs?: number;
  ended?: boolean;
}

/** A call's trace, started now (the call is run later, in a batch), as a child of the caller's active span. */
export function startCall(operation: CallTrace["operation"], stack: string, userGroupId: string): CallTrace {
  const parent = context.active();
  const span = automationTracer.startSpan(`user_groups.fleet.${operation}`, {}, parent);
  setSpanAttributes(span, () => ({ "user_groups.operation": operation, "user_groups.stack": stack, "user_groups.user_group_id": userGroupId }));
  return { operation, span, parent, enqueued: performance.now() };
}

/** A call answered: its span ended (outcome, or failure) and its duration measured. */
export function endCall(call: CallTrace, change: string | undefined, error: unknown): void {
  if (call.ended) return;
  call.ended = true;
  const type = error === undefined ? undefined : failSpan(call.span, error);
  setSpanAttributes(call.span, () => ({ "user_groups.outcome": change ?? "error" }));
  call.span.end();
  automationInstruments()?.ensureDuration.record((performance.now() - call.enqueued) / 1000, {
    "user_groups.operation": call.operation,
    "user_groups.outcome": change ?? "error",
    ...(type !== undefined ? { "error.type": type } : {}),
  });
}

/**
 * Runs one batch in its span `user_groups.fleet.batch`. Its parent is the span of
 * the batch's first call (so a lone sign-up's trace reads handler → ensure → batch →
 * lease wait, engine run → provider → HTTP); every other call of the batch is
 * linked from the batch's span and links to it. Each call's span gets the time it
 * was queued and the batch's size.
 */
export function inBatch(stack: string, batch: readonly Request[], callOf: (request: Request) => CallTrace | undefined, work: () => Promise<void>): Promise<void> {
  const calls = batch.map(callOf).filter((call): call is CallTrace => call !== undefined);
  const now = performance.now();
  const measure = automationInstruments();
  const operation = batch[0]!.kind;
  measure?.batchSize.record(batch.length, { "user_groups.operation": operation });
  for (const call of calls) {
    if (call.queuedMs === undefined) {
      call.queuedMs = now - call.enqueued;
      measure?.queued.record(call.queuedMs / 1000, { "user_groups.operation": operation });
    }
    setSpanAttributes(call.span, () => ({ "user_groups.queued_ms": call.queuedMs, "user_groups.batch.size": batch.length }));
  }
  const first = calls[0];
  const parent = first !== undefined ? trace.setSpan(first.parent, first.span) : context.active();
  const links: Link[] = calls.slice(1).filter((call) => call.span.isRecording()).map((call) => ({ context: call.span.spanContext() }));
  return inSpan(
    "user_groups.fleet.batch",
    { "user_groups.operation": operation, "user_groups.stack": stack, "user_groups.batch.size": batch.length },
    async (span) => {
      if (span.isRecording()) for (const call of calls.slice(1)) call.span.addLink({ context: span.spanContext() });
      await work();
    },
    { parent, links },
  );
}
