// The HTTP client's spans and metrics (docs/observability.md): one CLIENT span per
// attempt, after OpenTelemetry's HTTP client semantic conventions, and the request
// duration, retry, 429 and rate-budget metrics. The attempt's trace context goes
// out in its headers (`traceparent`, by the registered propagator). With no SDK
// registered everything here is the API's no-op: no attributes are even built.
import { context, isSpanContextValid, propagation, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { allowedAttributes, errorType, lazyInstruments, packageTracer, type TelemetryAttributes } from "../telemetry";
import { PACKAGE_VERSION } from "../version";
import type { UserGroupApiError } from "./errors";

/** OpenTelemetry's advised buckets for http.client.request.duration (seconds). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

const instruments = lazyInstruments(PACKAGE_VERSION, (meter) => ({
  duration: meter.createHistogram("http.client.request.duration", {
    description: "Duration of HTTP client requests (each attempt).",
    unit: "s",
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  }),
  retries: meter.createCounter("user_groups.http.retries", { description: "HTTP requests sent again after a failed attempt.", unit: "{retry}" }),
  rateLimited: meter.createCounter("user_groups.http.rate_limited", { description: "Answers 429 (too many requests).", unit: "{response}" }),
  budgetWait: meter.createHistogram("user_groups.rate_budget.wait", {
    description: "Time waited for a slot of the API key's rate budget.",
    unit: "s",
    advice: { explicitBucketBoundaries: [0, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120] },
  }),
}));

/** What the client knows of an attempt before it is sent. */
export interface AttemptFacts {
  readonly method: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly userGroupId?: string | undefined;
  /** Time waited for the rate-budget slot this attempt took. */
  readonly rateBudgetWaitMs?: number | undefined;
  /** Time waited, before this attempt, because the previous answer carried a Retry-After. */
  readonly retryAfterWaitMs?: number | undefined;
}

export class HttpTelemetry {
  private readonly tracer = packageTracer(PACKAGE_VERSION);
  private readonly server: { address: string; port: number };

  /** @param path the request path (without a query), already redacted */
  constructor(
    origin: string,
    private readonly path: string,
  ) {
    const url = new URL(origin);
    this.server = { address: url.hostname, port: url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80 };
  }

  /** The wait for a rate-budget slot (recorded whether or not a span is). */
  recordBudgetWait(ms: number): void {
    instruments()?.budgetWait.record(ms / 1000);
  }

  /** Starts the attempt's span (a child of the active context: retries are siblings). */
  startAttempt(facts: AttemptFacts): AttemptTelemetry {
    if (facts.attempt > 1) instruments()?.retries.add(1, { "http.request.method": facts.method });
    const span = this.tracer.startSpan(facts.method, { kind: SpanKind.CLIENT });
    if (span.isRecording()) {
      span.setAttributes(
        allowedAttributes({
          "http.request.method": facts.method,
          "server.address": this.server.address,
          "server.port": this.server.port,
          "url.path": this.path,
          "http.request.resend_count": facts.attempt > 1 ? facts.attempt - 1 : undefined,
          "user_groups.user_group_id": facts.userGroupId,
          "user_groups.rate_budget.wait_ms": facts.rateBudgetWaitMs,
          "user_groups.retry_after_ms": facts.retryAfterWaitMs,
        }),
      );
    }
    return new AttemptTelemetry(span, facts.method, this.server, performance.now());
  }
}

export class AttemptTelemetry {
  constructor(
    private readonly span: Span,
    private readonly method: string,
    private readonly server: { address: string; port: number },
    private readonly started: number,
  ) {}

  /** The headers with the attempt's trace context added (nothing without a registered propagator, nor without a trace). */
  inject<H extends Record<string, string>>(headers: H): H {
    if (this.span.isRecording() || isSpanContextValid(this.span.spanContext())) propagation.inject(trace.setSpan(context.active(), this.span), headers);
    return headers;
  }

  /** Ends the span and records the duration: the status answered (none: no answer) and the failure, if any. */
  end(status: number | undefined, failure: UserGroupApiError | undefined): void {
    // error.type: the status of a 4xx/5xx answer, else the failure's code (ECONNRESET, invalid_response, ...).
    const type = failure === undefined ? undefined : errorType(status !== undefined && status >= 400 ? status : (failure.code ?? failure.kind));
    const measure = instruments();
    if (measure !== undefined) {
      const attributes: TelemetryAttributes = {
        "http.request.method": this.method,
        "server.address": this.server.address,
        "server.port": this.server.port,
        "http.response.status_code": status,
        "error.type": type,
      };
      measure.duration.record((performance.now() - this.started) / 1000, allowedAttributes(attributes));
      if (status === 429) measure.rateLimited.add(1, { "http.request.method": this.method });
    }
    if (this.span.isRecording()) {
      this.span.setAttributes(allowedAttributes({ "http.response.status_code": status, "error.type": type }));
      if (type !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}
