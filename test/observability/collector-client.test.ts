// The HTTP client's spans through a real OTLP pipeline (issue #35 item 6): an
// application registers the OpenTelemetry SDK with the OTLP/gRPC trace exporter
// pointed at a real OpenTelemetry Collector (scripts/ensure-otelcol), makes requests
// with the package's client under its own span, and what the collector wrote to its
// file has the HTTP spans under that span, with OpenTelemetry's HTTP client
// attributes, and none of the secrets involved.
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import { RATE_BUDGET_ENV, rateBudgetFromEnv } from "../../provider/client/rate-budget";
import { type CollectedSpan, type OtelCollector, renderSpanTree, spanTree, startOtelCollector } from "../../testkit/otel-collector";
import { renderWaterfallSvg } from "../../testkit/trace-svg";

const CANARIES = {
  apiKey: "canary-api-key-c0113c70r",
  property: "canary-property-value-7d1e0a",
  mappingSecret: "canary-mapping-value-4b9e52",
  password: "canary-url-password-e61f08",
};

let collector: OtelCollector;
let server: FakeServer;
let provider: BasicTracerProvider;
let client: UserGroupsClient;

beforeAll(async () => {
  [collector, server] = await Promise.all([startOtelCollector(), startFakeServer({ apiKeys: [{ key: CANARIES.apiKey, environment: "Customer" }] })]);
  // What an application does (docs/observability.md, "Turning it on"), with the gRPC exporter.
  provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "sign-up-service" }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: collector.grpcEndpoint }), { scheduledDelayMillis: 100 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const url = new URL(server.url);
  const baseUrl = `http://user:${CANARIES.password}@${url.host}`;
  // A key's rate budget, as the provider has: 5 requests a second, so back-to-back requests wait for slots.
  const rateBudget = rateBudgetFromEnv({ [RATE_BUDGET_ENV.limit]: "5/1" }, baseUrl, CANARIES.apiKey);
  client = new UserGroupsClient({ baseUrl, apiKey: CANARIES.apiKey, retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...(rateBudget ? { rateBudget } : {}) });
});

afterAll(async () => {
  await client?.close();
  await provider?.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
  await server?.close();
  await collector?.stop();
});

describe("the HTTP client's spans in a real OpenTelemetry Collector", () => {
  it("arrive under the caller's span with the HTTP client attributes, retries as siblings, and no secret", async () => {
    const tokens: string[] = [];
    const caller = await trace.getTracer("sign-up-service").startActiveSpan("POST /sign-up", { kind: SpanKind.SERVER }, async (span) => {
      try {
        const created = await client.getOrCreate({
          name: "Collected",
          user_group_id: "collected-1",
          mapping: { secret: CANARIES.mappingSecret },
          properties: { note: CANARIES.property },
        });
        tokens.push(created.response.user_group.token);
        server.setFaults([{ method: "PUT", action: "status", status: 503, times: 1 }]);
        await client.update({ user_group_id: "collected-1", properties: { note: CANARIES.property, more: CANARIES.mappingSecret } });
        const rotated = await client.rotateToken(created.response.user_group.token, "collected-1");
        tokens.push(rotated.user_group.token);
        await client.delete({ current_token: rotated.user_group.token, user_group_id: "collected-1" });
      } finally {
        span.end();
      }
      return span.spanContext();
    });
    await provider.forceFlush();

    const isMine = (s: CollectedSpan) => s.traceId === caller.traceId;
    // GET (get-or-create) + PUT 503 + PUT retry + POST (rotate) + DELETE, and the caller's span.
    const spans = await collector.waitForSpans((all) => all.filter(isMine).length >= 6);
    const mine = spans.filter(isMine);
    const text = renderSpanTree(mine, ["http.response.status_code", "http.request.resend_count", "user_groups.rate_budget.wait_ms"]);

    // The structure: the caller's SERVER span is the root; every request is its CLIENT child.
    const [root, ...others] = spanTree(mine);
    expect(others, text).toEqual([]);
    expect(root!.span).toMatchObject({ name: "POST /sign-up", kind: "SERVER", spanId: caller.spanId, parentSpanId: undefined, service: "sign-up-service" });
    const requests = root!.children.map((c) => c.span);
    expect(requests.length, text).toBeGreaterThanOrEqual(5);
    for (const r of requests) {
      expect(r.kind).toBe("CLIENT");
      expect(r.scope).toBe("pulumi-user-groups");
      expect(r.parentSpanId).toBe(caller.spanId);
      expect(r.service).toBe("sign-up-service");
      expect(r.name).toBe(r.attributes["http.request.method"]);
      // Within the caller's span (each SDK span anchors its clock at Date.now(), to the millisecond: 2 ms of slack).
      expect(r.startMs).toBeGreaterThanOrEqual(root!.span.startMs - 2);
      expect(r.endMs).toBeLessThanOrEqual(root!.span.endMs + 2);
      expect(r.attributes).toMatchObject({ "server.address": "127.0.0.1", "server.port": Number(new URL(server.url).port), "url.path": expect.stringMatching(/^\/api\/user/) });
    }
    expect(requests.map((r) => r.name), text).toEqual(expect.arrayContaining(["GET", "PUT", "POST", "DELETE"]));

    // The 503 and its retry: siblings, the retry with resend_count 1, the failure with error.type.
    const puts = requests.filter((r) => r.name === "PUT");
    const failed = puts.find((r) => r.attributes["http.response.status_code"] === 503);
    expect(failed, text).toBeDefined();
    expect(failed!.attributes["error.type"]).toBe("503");
    expect(failed!.statusCode).toBe(2);
    const retry = puts.find((r) => r.attributes["http.request.resend_count"] === 1);
    expect(retry, text).toMatchObject({ attributes: expect.objectContaining({ "http.response.status_code": 200 }), statusCode: 0 });
    expect(retry!.startMs).toBeGreaterThanOrEqual(failed!.endMs);
    for (const r of requests.filter((r) => r.attributes["user_groups.user_group_id"] !== undefined)) {
      expect(r.attributes["user_groups.user_group_id"]).toBe("collected-1");
    }
    // Every attempt says how long it waited for a slot of the key's rate budget; back to back, some waited.
    const waits = requests.map((r) => r.attributes["user_groups.rate_budget.wait_ms"]);
    expect(waits.every((w) => typeof w === "number" && w >= 0), text).toBe(true);
    expect(Math.max(...(waits as number[])), text).toBeGreaterThan(50);

    // The fake server saw the same trace: each request's traceparent names its span.
    const journal = server.journal().filter((e) => e.traceId === caller.traceId);
    expect(new Set(journal.map((e) => e.traceparent?.split("-")[2]))).toEqual(new Set(requests.map((r) => r.spanId)));

    // Nothing secret reached the collector: not the API key, the tokens, the property or mapping values, the URL's password.
    const exported = readFileSync(collector.tracesFile, "utf8");
    for (const canary of [...Object.values(CANARIES), ...tokens]) expect(exported).not.toContain(canary);

    // The waterfall of it (as docs/observability.md's pictures): a row per span, by depth, names and times only.
    const svg = renderWaterfallSvg(mine, { title: "sign-up" });
    const rows = [...svg.matchAll(/<text x="(\d+)" y="[\d.]+" fill="#222">([^<]+)<\/text>/g)].map((m) => [Number(m[1]), m[2]]);
    expect(rows).toEqual([[20, "POST /sign-up"], ...requests.map((r) => [32, r.name])]);
    for (const hidden of ["collected-1", "/api/user", "127.0.0.1", ...Object.values(CANARIES), ...tokens]) expect(svg).not.toContain(hidden);
  });
});
