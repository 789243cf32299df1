// The automation layers' spans and metrics (docs/observability.md, "What is traced",
// "What is measured"): a span helper for the fleet, shards, operations and engine
// runs, and the lease wait. Through provider/telemetry.ts only (the API, the
// allow-list): with no SDK registered every span is the API's no-op and no
// instrument is made. Here, the lowest automation layer, so that every layer above
// reaches it through lease/index.ts.
import { type Context, context, type Link, type Span, SpanStatusCode, type TimeInput, trace } from "@opentelemetry/api";
import { allowedAttributes, errorType, lazyInstruments, packageTracer, type TelemetryAttributes } from "../../telemetry";
import { PACKAGE_VERSION } from "../../version";
import type { RunRecord } from "../../backends";

export const tracer = packageTracer(PACKAGE_VERSION);

/** Buckets (seconds) for waits and runs that last from milliseconds to minutes. */
const RUN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** The instruments of the automation layers (made on first use once a meter provider is registered). */
export const automationInstruments = lazyInstruments(PACKAGE_VERSION, (meter) => ({
  ensureDuration: meter.createHistogram("user_groups.fleet.request.duration", {
    description: "Time from a fleet call (ensure, remove) to its answer, queueing included.",
    unit: "s",
    advice: { explicitBucketBoundaries: RUN_BUCKETS },
  }),
  queued: meter.createHistogram("user_groups.fleet.queue.duration", {
    description: "Time a fleet call waited before its batch started.",
    unit: "s",
    advice: { explicitBucketBoundaries: RUN_BUCKETS },
  }),
  batchSize: meter.createHistogram("user_groups.fleet.batch.size", {
    description: "Calls served by one fleet batch.",
    unit: "{request}",
    advice: { explicitBucketBoundaries: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
  }),
  engineRuns: meter.createCounter("user_groups.engine.runs", { description: "Pulumi engine runs started.", unit: "{run}" }),
  engineDuration: meter.createHistogram("user_groups.engine.run.duration", {
    description: "Duration of each Pulumi engine run.",
    unit: "s",
    advice: { explicitBucketBoundaries: RUN_BUCKETS },
  }),
  leaseWait: meter.createHistogram("user_groups.lease.wait", {
    description: "Time waited for a stack's run lease (0 when it was free).",
    unit: "s",
    advice: { explicitBucketBoundaries: [0, ...RUN_BUCKETS] },
  }),
  takeovers: meter.createCounter("user_groups.takeovers", { description: "Takeovers of what dead runs left on a stack.", unit: "{takeover}" }),
  adopted: meter.createCounter("user_groups.takeover.adopted", { description: "Groups adopted by takeovers (pending creates a dead run left).", unit: "{group}" }),
}));

/** `error.type` of a failure: our error code, else the error's name (sanitized), else `_OTHER`. */
export function errorTypeOf(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string") return errorType(code);
    const name = (error as { name?: unknown }).name;
    if (typeof name === "string") return errorType(name);
  }
  return "_OTHER";
}

/** Marks a span failed: status ERROR and `error.type` (no message: it could quote a body or a value). */
export function failSpan(span: Span, error: unknown): string {
  const type = errorTypeOf(error);
  if (span.isRecording()) {
    span.setAttributes(allowedAttributes({ "error.type": type }));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  return type;
}

export interface SpanOptions {
  readonly links?: Link[];
  readonly startTime?: TimeInput;
  /** The parent context (default: the active one). */
  readonly parent?: Context;
}

/**
 * Runs `work` in a new span (the active one while it runs, so that spans, and the
 * TRACEPARENT given to engine commands, started under it are its children); ends it
 * when `work` settles, failed (status ERROR, `error.type`) when it throws.
 */
export function inSpan<T>(name: string, attributes: TelemetryAttributes, work: (span: Span) => Promise<T>, options: SpanOptions = {}): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(
    name,
    { ...(options.links ? { links: options.links } : {}), ...(options.startTime !== undefined ? { startTime: options.startTime } : {}) },
    parent,
  );
  if (span.isRecording()) span.setAttributes(allowedAttributes(attributes));
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await work(span);
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Sets allow-listed attributes on a span (nothing is built when it does not record). */
export function setSpanAttributes(span: Span, attributes: () => TelemetryAttributes): void {
  if (span.isRecording()) span.setAttributes(allowedAttributes(attributes()));
}

/** What holds a stack's run lease, as a kind (never a host name or pid). */
export function holderKind(holder: RunRecord | undefined, host: string): string {
  if (holder === undefined) return "unknown";
  return holder.host === host ? "this_host" : "other_host";
}

const LEASE_WAIT = Symbol("user_groups.lease_wait");

/**
 * The wait for a stack's run lease, from the moment a run first asked for it
 * (withLockWait) until the lease is taken: one `user_groups.lease.wait` span and
 * one measurement each time a lease is taken (a wait that starts again, after a
 * Pulumi lock sent the run round again, is a new one).
 */
export class LeaseWait {
  private refusals = 0;
  private holder: string | undefined;
  private holderEpoch: number | undefined;

  constructor(
    private readonly stackName: string,
    private started: number = Date.now(),
    private readonly parent: Context = context.active(),
  ) {}

  /** The run met a holder (the lease, or Pulumi's own lock: `holder` "pulumi_lock"). */
  refused(holder: string, holderEpoch?: number): void {
    this.refusals += 1;
    this.holder = holder;
    this.holderEpoch = holderEpoch;
  }

  /** The lease is ours: the wait's span and measurement. */
  acquired(epoch: number | undefined): void {
    const now = Date.now();
    automationInstruments()?.leaseWait.record(Math.max(0, now - this.started) / 1000, allowedAttributes({ "user_groups.lease.holder": this.holder ?? "none" }));
    this.endSpan(now, { epoch });
    this.started = now;
    this.refusals = 0;
    this.holder = undefined;
    this.holderEpoch = undefined;
  }

  /** The wait ended without a lease (a timeout, an error): its span, failed, when it had waited at all. */
  gaveUp(error: unknown): void {
    if (this.refusals > 0) this.endSpan(Date.now(), { error });
  }

  /** The wait's span, from its start to `now`. */
  private endSpan(now: number, end: { epoch?: number | undefined; error?: unknown }): void {
    const span = tracer.startSpan("user_groups.lease.wait", { startTime: this.started }, this.parent);
    setSpanAttributes(span, () => ({
      "user_groups.stack": this.stackName,
      "user_groups.lease.wait_ms": Math.max(0, now - this.started),
      "user_groups.lease.refusals": this.refusals,
      "user_groups.lease.holder": this.holder,
      "user_groups.lease.holder_epoch": this.holderEpoch,
      "user_groups.lease.epoch": end.epoch,
    }));
    if ("error" in end) failSpan(span, end.error);
    span.end(now);
  }

  /** Runs `work` with this wait as the one acquireRunLease reports to. */
  run<T>(work: () => Promise<T>): Promise<T> {
    return context.with(context.active().setValue(LEASE_WAIT, this), work);
  }
}

/** The lease wait of the active context (set by withLockWait), if any. */
export function currentLeaseWait(): LeaseWait | undefined {
  const value = context.active().getValue(LEASE_WAIT);
  return value instanceof LeaseWait ? value : undefined;
}
