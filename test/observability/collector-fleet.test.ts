// A fleet sign-up traced end to end into a real OpenTelemetry Collector (issue #35
// item 6): the sign-up service registers the OpenTelemetry SDK with OTLP/gRPC
// exporters pointed at the collector (scripts/ensure-otelcol); its engine runs get
// the same collector as their `--otel-traces` destination (from the standard
// OTEL_EXPORTER_OTLP_* variables) and the trace context of the call. What the
// collector wrote is one trace: the service's span -> ensure -> batch -> engine run
// -> the engine's `pulumi` root -> ... -> the provider's `UserGroup create` -> its
// HTTP requests, with the timing attributes (queued time, lease wait, rate-budget
// wait, the retry of a 503) and the fleet's metrics; and no secret anywhere in it.
import { context, metrics, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../provider/automation";
import { startPostgres } from "../../testkit/postgres";
import { ancestors, type CollectedSpan, type OtelCollector, renderSpanTree, startOtelCollector } from "../../testkit/otel-collector";
import { useStackFixture } from "../support/stack-fixture";

const tag = randomBytes(5).toString("hex");
const CANARY = {
  apiKey: `canary-fleet-apikey-${tag}`,
  passphrase: `canary-fleet-passphrase-${tag}`,
  property: `canary-fleet-property-${tag}`,
  mapping: `canary-fleet-mapping-${tag}`,
};
const DB_PASSWORD = `canary-db-password-${tag}`;
const { server, env, runOptions } = useStackFixture({ label: "collector-fleet", apiKeys: [CANARY.apiKey], passphrase: CANARY.passphrase });

let collector: OtelCollector;
let tracerProvider: BasicTracerProvider;
let meterProvider: MeterProvider;

beforeAll(async () => {
  collector = await startOtelCollector();
  // The service's SDK (docs/observability.md, "Turning it on"), exporting over OTLP/gRPC.
  const resource = resourceFromAttributes({ "service.name": "onboarding-service" });
  tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: collector.grpcEndpoint }), { scheduledDelayMillis: 200 })],
  });
  meterProvider = new MeterProvider({
    resource,
    readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: collector.grpcEndpoint }), exportIntervalMillis: 60_000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
});

afterAll(async () => {
  await tracerProvider?.shutdown();
  await meterProvider?.shutdown();
  trace.disable();
  metrics.disable();
  propagation.disable();
  context.disable();
  await collector?.stop();
});

describe("a fleet sign-up in a real OpenTelemetry Collector", () => {
  it("is one trace from the service's span through ensure, the engine run and the provider to its HTTP requests, with timings and no secret", async () => {
    // The engine-run path (slowPathFleet): its ensure's trace holds the engine run; a record-first sign-up answers before it.
    const fleet = new UserGroupFleet(
      runOptions("signups", {
        workDir: path.join(env.workDir, "signups"),
        // The engine exports to the application's collector: OTLP over gRPC, as the service's exporter says.
        envVars: {
          ...runOptions("signups").envVars,
          OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint,
          // A key's rate budget of 20 requests a second (the global test setup turns pacing off).
          USER_GROUPS_RATE_LIMIT: "20/1",
        },
      }),
      undefined,
      "none",
    );
    // The create's first PUT is answered 503 once: the provider retries it.
    server.setFaults([{ method: "PUT", action: "status", status: 503, times: 1 }]);
    let signUp: { traceId: string; spanId: string };
    try {
      signUp = await trace.getTracer("onboarding-service").startActiveSpan("POST /sign-up", { kind: SpanKind.SERVER }, async (span) => {
        try {
          const result = await fleet.ensure({ name: "Traced Inc", userGroupId: "traced-inc", mapping: { role: CANARY.mapping }, properties: { note: CANARY.property } });
          expect(result.change).toBe("create");
        } finally {
          span.end();
        }
        return span.spanContext();
      });
    } finally {
      await fleet.close();
      server.setFaults([]);
    }
    await tracerProvider.forceFlush();
    await meterProvider.forceFlush();

    const inTrace = (s: CollectedSpan) => s.traceId === signUp.traceId;
    // Until the whole chain is there: the retried PUT's ancestors reach the service's span (the collector writes as it receives).
    const complete = (all: CollectedSpan[]) => {
      const mine = all.filter(inTrace);
      const retry = mine.find((s) => s.name === "PUT" && s.attributes["http.request.resend_count"] === 1);
      return retry !== undefined && ancestors(mine, retry).at(-1)?.spanId === signUp.spanId;
    };
    const spans = (await collector.waitForSpans(complete, 30_000)).filter(inTrace);
    const text = renderSpanTree(spans, ["user_groups.queued_ms", "user_groups.lease.wait_ms", "user_groups.rate_budget.wait_ms", "http.response.status_code", "http.request.resend_count"]);
    const named = (name: string, service?: string) => spans.filter((s) => s.name === name && (service === undefined || s.service === service));

    // The HTTP requests of the create: the 503, its retry (a sibling, resend_count 1), each under `UserGroup create`.
    const [create] = named("UserGroup create", "pulumi-user-groups-dynamic-provider");
    expect(create, text).toBeDefined();
    expect(create!.attributes["user_groups.user_group_id"]).toBe("traced-inc");
    const requests = spans.filter((s) => s.parentSpanId === create!.spanId);
    expect(requests.every((r) => r.kind === "CLIENT" && r.name === r.attributes["http.request.method"]), text).toBe(true);
    const failed = requests.find((r) => r.name === "PUT" && r.attributes["http.response.status_code"] === 503);
    const retried = requests.find((r) => r.name === "PUT" && r.attributes["http.request.resend_count"] === 1);
    expect(failed, text).toMatchObject({ statusCode: 2, attributes: expect.objectContaining({ "error.type": "503" }) });
    expect(retried, text).toMatchObject({ attributes: expect.objectContaining({ "http.response.status_code": 200 }) });
    expect(retried!.startMs).toBeGreaterThanOrEqual(failed!.endMs);
    // Each attempt says how long it waited for a slot of the key's rate budget.
    for (const r of requests) expect(r.attributes["user_groups.rate_budget.wait_ms"], text).toEqual(expect.any(Number));

    // Its ancestry, across three processes, up to the service's span: the provider process's server span, the
    // engine's client span, the engine's root `pulumi`, the fleet's engine run, batch and ensure, the service.
    const chain = ancestors(spans, retried!);
    const lineage = chain.map((s) => `${s.service}: ${s.name}`);
    const expected = [
      "pulumi-user-groups-dynamic-provider: UserGroup create",
      "pulumi-user-groups-dynamic-provider: pulumirpc.ResourceProvider/Create",
      "pulumi-cli: pulumirpc.ResourceProvider/Create",
      "pulumi-cli: pulumi",
      "onboarding-service: user_groups.engine.up",
      "onboarding-service: user_groups.fleet.batch",
      "onboarding-service: user_groups.fleet.ensure",
      "onboarding-service: POST /sign-up",
    ];
    expect(lineage.filter((p) => expected.includes(p)), text).toEqual(expected);
    expect(chain.at(-1)!.spanId).toBe(signUp.spanId); // the service's span is the root of it all
    expect(chain.at(-1)!.parentSpanId).toBeUndefined();
    // Kinds: the engine's call is CLIENT, the provider's answer SERVER.
    expect(chain[1]!.kind).toBe("SERVER");
    expect(chain[2]!.kind).toBe("CLIENT");
    // Each child starts and ends within its parent (5 ms of slack: each process, and each Node.js span, anchors its
    // clock on its own, to the millisecond), but the batch: it answers its callers (their ensure spans end) before it
    // releases the lease and ends.
    for (const [child, parent] of [retried!, ...chain].map((s, i, all) => [s, all[i + 1]] as const)) {
      if (!parent) continue;
      expect(child.startMs, `${child.name} in ${parent.name}`).toBeGreaterThanOrEqual(parent.startMs - 5);
      if (child.name === "user_groups.fleet.batch") continue;
      expect(child.endMs, `${child.name} in ${parent.name}`).toBeLessThanOrEqual(parent.endMs + 5);
    }

    // The fleet's timing attributes: the ensure's time queued, its batch and shard; the lease wait before the run.
    const [ensure] = named("user_groups.fleet.ensure");
    expect(ensure!.attributes).toMatchObject({ "user_groups.operation": "ensure", "user_groups.user_group_id": "traced-inc", "user_groups.batch.size": 1, "user_groups.shard": 0, "user_groups.outcome": "create" });
    expect(ensure!.attributes["user_groups.queued_ms"]).toEqual(expect.any(Number));
    const batch = chain.find((s) => s.name === "user_groups.fleet.batch")!;
    const waits = spans.filter((s) => s.name === "user_groups.lease.wait" && s.parentSpanId === batch.spanId);
    expect(waits.length, text).toBeGreaterThanOrEqual(1);
    expect(waits[0]!.attributes["user_groups.lease.wait_ms"]).toEqual(expect.any(Number));
    const up = chain.find((s) => s.name === "user_groups.engine.up")!;
    expect(up.attributes).toMatchObject({ "user_groups.operation": "up", "user_groups.stack": "signups" });
    expect(up.startMs).toBeGreaterThanOrEqual(waits.at(-1)!.endMs - 2);

    // The service's metrics reached the collector too.
    const wanted = ["user_groups.fleet.request.duration", "user_groups.fleet.batch.size", "user_groups.engine.runs", "user_groups.engine.run.duration", "user_groups.lease.wait"];
    const points = await collector.waitForMetrics((all) => wanted.every((name) => all.some((p) => p.name === name)));
    const ensured = points.filter((p) => p.name === "user_groups.fleet.request.duration" && p.attributes["user_groups.outcome"] === "create");
    expect(ensured.at(-1)).toMatchObject({ type: "histogram", unit: "s", service: "onboarding-service", count: 1 });
    expect(points.filter((p) => p.name === "user_groups.engine.runs" && p.attributes["user_groups.operation"] === "up").at(-1)?.value).toBeGreaterThanOrEqual(1);

    // The provider process's HTTP metrics reached it too (the engine passed the run's OTEL_* on; the preload exports
    // them, flushed before each answer): the 503 and the 200 of the PUT by status, the retry counted, the rate-budget waits.
    const PROVIDER = "pulumi-user-groups-dynamic-provider";
    const providerPoints = await collector.waitForMetrics((all) =>
      ["http.client.request.duration", "user_groups.http.retries", "user_groups.rate_budget.wait"].every((name) => all.some((p) => p.name === name && p.service === PROVIDER)),
    );
    const ofProvider = (name: string) => providerPoints.filter((p) => p.name === name && p.service === PROVIDER);
    const puts = ofProvider("http.client.request.duration").filter((p) => p.attributes["http.request.method"] === "PUT");
    expect(puts.some((p) => p.attributes["http.response.status_code"] === 503 && p.attributes["error.type"] === "503")).toBe(true);
    expect(puts.some((p) => p.attributes["http.response.status_code"] === 200 && p.attributes["error.type"] === undefined)).toBe(true);
    expect(ofProvider("user_groups.http.retries").at(-1)).toMatchObject({ type: "sum", value: 1, attributes: { "http.request.method": "PUT" } });
    expect(ofProvider("user_groups.rate_budget.wait").at(-1)).toMatchObject({ type: "histogram", unit: "s" });
    expect(ofProvider("user_groups.rate_budget.wait").at(-1)!.count).toBeGreaterThanOrEqual(3); // the GET, the PUT, its retry

    // No secret anywhere the collector wrote: the API key, the passphrase, property and mapping values, the group's token.
    const tokens = server.groups().map((g) => g.token);
    expect(tokens).toHaveLength(1);
    const exported = readFileSync(collector.tracesFile, "utf8") + readFileSync(collector.metricsFile, "utf8");
    for (const canary of [...Object.values(CANARY), ...tokens]) expect(exported).not.toContain(canary);
  });
  it("on a PostgreSQL backend (password in the backend URL): the same chain, the lease's wait, and no database password in anything exported", async () => {
    const postgres = await startPostgres({ password: DB_PASSWORD });
    const backendUrl = postgres.backendUrl.replace("postgres://postgres@", `postgres://postgres:${DB_PASSWORD}@`);
    const fleet = new UserGroupFleet(
      runOptions("shared", {
        workDir: path.join(env.workDir, "shared"),
        backendUrl,
        envVars: { ...runOptions("shared").envVars, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint },
      }),
    );
    let signUp: { traceId: string; spanId: string };
    try {
      signUp = await trace.getTracer("onboarding-service").startActiveSpan("POST /sign-up", { kind: SpanKind.SERVER }, async (span) => {
        try {
          expect((await fleet.ensure({ name: "Shared Inc", userGroupId: "shared-inc", properties: { note: CANARY.property } })).change).toBe("create");
        } finally {
          span.end();
        }
        return span.spanContext();
      });
    } finally {
      await fleet.close();
      postgres.stop();
    }
    await tracerProvider.forceFlush();
    const inTrace = (s: CollectedSpan) => s.traceId === signUp.traceId;
    const chainOf = (all: CollectedSpan[]) => {
      const mine = all.filter(inTrace);
      const request = mine.find((s) => s.kind === "CLIENT" && s.service === "pulumi-user-groups-dynamic-provider");
      return { mine, chain: request ? ancestors(mine, request) : [] };
    };
    const { mine, chain } = chainOf(await collector.waitForSpans((all) => chainOf(all).chain.at(-1)?.spanId === signUp.spanId, 30_000));
    const text = renderSpanTree(mine, ["user_groups.lease.wait_ms", "user_groups.lease.epoch"]);
    const names = chain.map((s) => s.name);
    for (const name of ["UserGroup create", "pulumi", "user_groups.engine.up", "user_groups.fleet.batch", "user_groups.fleet.ensure", "POST /sign-up"]) expect(names, text).toContain(name);
    // The PostgreSQL run lease was waited for (and taken) under the batch, before the engine run.
    const batch = chain.find((s) => s.name === "user_groups.fleet.batch")!;
    const wait = mine.find((s) => s.name === "user_groups.lease.wait" && s.parentSpanId === batch.spanId);
    expect(wait?.attributes["user_groups.lease.wait_ms"], text).toEqual(expect.any(Number));

    // Not the database password (nor its URL-encoded form), nor the other secrets.
    const exported = readFileSync(collector.tracesFile, "utf8") + readFileSync(collector.metricsFile, "utf8");
    const tokens = server.groups().map((g) => g.token);
    for (const canary of [DB_PASSWORD, encodeURIComponent(DB_PASSWORD), ...Object.values(CANARY), ...tokens]) expect(exported).not.toContain(canary);
  });
  it("two sign-ups in one batch: each ensure under its own service span, the batch under the first and linked with the other, both ways", async () => {
    const fleet = new UserGroupFleet(
      runOptions("together", {
        workDir: path.join(env.workDir, "together"),
        // A wide batch window so that both calls surely join one batch.
        batchWindowMs: 500,
        envVars: { ...runOptions("together").envVars, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint },
      }),
    );
    const signUp = (id: string) =>
      trace.getTracer("onboarding-service").startActiveSpan(`POST /sign-up ${id}`, { kind: SpanKind.SERVER }, async (span) => {
        try {
          expect((await fleet.ensure({ name: `${id} Inc`, userGroupId: id })).change).toBe("create");
        } finally {
          span.end();
        }
        return span.spanContext();
      });
    let handlers: Array<{ traceId: string; spanId: string }>;
    try {
      handlers = await Promise.all([signUp("first-co"), signUp("second-co")]);
    } finally {
      await fleet.close();
    }
    await tracerProvider.forceFlush();
    const ensureOf = (all: CollectedSpan[], handler: { spanId: string }) => all.find((s) => s.name === "user_groups.fleet.ensure" && s.parentSpanId === handler.spanId);
    const spans = await collector.waitForSpans((all) => {
      const batches = all.filter((s) => s.name === "user_groups.fleet.batch" && s.attributes["user_groups.batch.size"] === 2);
      return handlers.every((h) => ensureOf(all, h)) && batches.some((b) => all.some((s) => s.name === "user_groups.engine.up" && s.parentSpanId === b.spanId));
    });
    const [first, second] = handlers.map((h) => ensureOf(spans, h)!);
    // Each ensure is in its own service span's trace, with the batch's size.
    for (const [ensure, handler] of [[first!, handlers[0]!], [second!, handlers[1]!]] as const) {
      expect(ensure.traceId).toBe(handler.traceId);
      expect(ensure.attributes).toMatchObject({ "user_groups.batch.size": 2, "user_groups.outcome": "create" });
    }
    // One batch and one engine run for both: in the trace of the call that came first, linked with the other's.
    const batch = spans.find((s) => s.name === "user_groups.fleet.batch" && (s.parentSpanId === first!.spanId || s.parentSpanId === second!.spanId))!;
    const [parentCall, otherCall] = batch.parentSpanId === first!.spanId ? [first!, second!] : [second!, first!];
    expect(batch.traceId).toBe(parentCall.traceId);
    expect(batch.links).toEqual([{ traceId: otherCall.traceId, spanId: otherCall.spanId }]);
    expect(otherCall.links).toEqual([{ traceId: batch.traceId, spanId: batch.spanId }]);
    expect(spans.filter((s) => s.name === "user_groups.engine.up" && s.parentSpanId === batch.spanId)).toHaveLength(1);
  });
});
