// The HTTP client's spans and metrics through a real OpenTelemetry SDK (issue #35,
// docs/observability.md): one CLIENT span per attempt under the caller's span,
// retries as siblings, OpenTelemetry's HTTP attributes, the fake server's journal
// holding the same trace, the metrics, and no secret anywhere in what is exported.
import { type Attributes, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Histogram, ResourceMetrics } from "@opentelemetry/sdk-metrics";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import type { RateBudget } from "../../provider/client/rate-budget";
import { allowedAttributes, errorType } from "../../provider/telemetry";
import { registerTestSdk, spanData, type TestSdk } from "./telemetry-sdk";

const KEY = "canary-api-key-5f3a9c1e7d";
let server: FakeServer;
let sdk: TestSdk;
const clients: UserGroupsClient[] = [];

/** A client on a fake clock (no real waiting) whose rate budget makes each slot 40 ms away. */
function client(options: Partial<ConstructorParameters<typeof UserGroupsClient>[0]> = {}): UserGroupsClient {
  let time = Date.now();
  const budget: RateBudget = {
    acquire: async () => {
      time += 40;
    },
    holdOff: async () => undefined,
  };
  const c = new UserGroupsClient({
    baseUrl: server.url,
    apiKey: KEY,
    rateBudget: budget,
    clock: { now: () => time, sleep: async (ms) => void (time += ms), random: () => 0.5 },
    ...options,
  });
  clients.push(c);
  return c;
}

const tracer = () => trace.getTracer("test-application");

/** Runs `work` inside an application span (as a service's HTTP handler would) and returns that span's ids. */
async function underCallerSpan(work: () => Promise<unknown>): Promise<{ traceId: string; spanId: string }> {
  return tracer().startActiveSpan("sign-up", async (span) => {
    try {
      await work();
    } finally {
      span.end();
    }
    return span.spanContext();
  });
}

const requestSpans = (): ReadableSpan[] => sdk.spans.getFinishedSpans().filter((s) => s.instrumentationScope.name === "pulumi-user-groups");

function metric(all: ResourceMetrics, name: string) {
  const found = all.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  expect(found, name).toBeDefined();
  return found!;
}

beforeAll(async () => {
  sdk = registerTestSdk();
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
});
afterEach(async () => {
  server.setFaults([]);
  await server.reset();
  sdk.spans.reset();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.close();
  await sdk.shutdown();
});

describe("HTTP client spans", () => {
  it("each attempt is a CLIENT span under the caller's span; a retry is a sibling with resend_count and its waits", async () => {
    const c = client();
    server.setFaults([{ method: "GET", action: "status", status: 503, retryAfter: 2, times: 1 }]);
    const caller = await underCallerSpan(() => c.getOrCreate({ name: "Traced", user_group_id: "traced-1", mapping: {} }));

    const spans = requestSpans();
    expect(spans.map((s) => s.name)).toEqual(["GET", "GET"]);
    for (const span of spans) {
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(span.spanContext().traceId).toBe(caller.traceId);
      expect(span.parentSpanContext?.spanId).toBe(caller.spanId);
    }
    const port = Number(new URL(server.url).port);
    const [first, second] = spans as [ReadableSpan, ReadableSpan];
    expect(first.attributes).toEqual({
      "http.request.method": "GET",
      "server.address": "127.0.0.1",
      "server.port": port,
      "url.path": "/api/user",
      "user_groups.user_group_id": "traced-1",
      "user_groups.rate_budget.wait_ms": 40,
      "http.response.status_code": 503,
      "error.type": "503",
    });
    expect(first.status.code).toBe(SpanStatusCode.ERROR);
    expect(second.attributes).toMatchObject({
      "http.request.method": "GET",
      "http.request.resend_count": 1,
      "http.response.status_code": 200,
      "user_groups.rate_budget.wait_ms": 40,
      "user_groups.retry_after_ms": 2000,
    });
    expect(second.attributes["error.type"]).toBeUndefined();
    expect(second.status.code).toBe(SpanStatusCode.UNSET);

    // The fake server's journal holds the same trace, and each attempt's own span as the parent id.
    const journal = server.journal();
    expect(journal.map((e) => e.traceId)).toEqual([caller.traceId, caller.traceId]);
    expect(journal.map((e) => e.traceparent)).toEqual(spans.map((s) => `00-${caller.traceId}-${s.spanContext().spanId}-01`));
  });

  it("a network failure's error.type is its code, with no status", async () => {
    const c = client({ baseUrl: "http://127.0.0.1:1", retry: { maxAttempts: 1 } });
    await underCallerSpan(() => c.getOrCreate({ name: "Nowhere", user_group_id: "nowhere", mapping: {} }).catch(() => undefined));
    const [span] = requestSpans();
    expect(span?.attributes["error.type"]).toBe("ECONNREFUSED");
    expect(span?.attributes["http.response.status_code"]).toBeUndefined();
    expect(span?.attributes["server.port"]).toBe(1);
  });

  it("records the request duration, retries, 429s and rate-budget waits as metrics", async () => {
    const c = client();
    server.setFaults([{ method: "PUT", action: "status", status: 429, retryAfter: 1, times: 1 }]);
    await c.getOrCreate({ name: "Metered", user_group_id: "metered", mapping: {} });
    await c.update({ user_group_id: "metered", name: "Metered 2" });
    const all = await sdk.metrics();

    const duration = metric(all, "http.client.request.duration");
    expect(duration.descriptor.unit).toBe("s");
    const points = duration.dataPoints.map((p) => ({ attributes: p.attributes, count: (p.value as Histogram).count }));
    expect(points).toEqual(
      expect.arrayContaining([
        { attributes: { "http.request.method": "PUT", "server.address": "127.0.0.1", "server.port": expect.any(Number), "http.response.status_code": 429, "error.type": "429" }, count: 1 },
        { attributes: { "http.request.method": "PUT", "server.address": "127.0.0.1", "server.port": expect.any(Number), "http.response.status_code": 200 }, count: 1 },
      ]),
    );
    const retries = metric(all, "user_groups.http.retries").dataPoints;
    expect(retries.find((p) => p.attributes["http.request.method"] === "PUT")?.value).toBe(1);
    expect(metric(all, "user_groups.http.rate_limited").dataPoints.find((p) => p.attributes["http.request.method"] === "PUT")?.value).toBe(1);
    const wait = metric(all, "user_groups.rate_budget.wait");
    expect(wait.descriptor.unit).toBe("s");
    const waited = wait.dataPoints[0]!.value as Histogram;
    expect(waited.count).toBeGreaterThanOrEqual(3);
    expect(waited.min).toBeCloseTo(0.04, 6);
  });
});

describe("what is never recorded", () => {
  it("no API key, token, property value, passphrase or password appears in any exported span or metric", async () => {
    const canaries = {
      key: KEY,
      property: "canary-property-value-8e21b4",
      passphrase: "canary-passphrase-0c77d2",
      password: "canary-password-91fa3e",
    };
    process.env["PULUMI_CONFIG_PASSPHRASE"] = canaries.passphrase;
    try {
      const c = client({ baseUrl: `http://user:${canaries.password}@${new URL(server.url).host}` });
      const tokens: string[] = [];
      await underCallerSpan(async () => {
        const created = await c.getOrCreate({ name: "Canary", user_group_id: "canary", mapping: { secret: canaries.passphrase }, properties: { note: canaries.property } });
        tokens.push(created.response.user_group.token);
        await c.update({ user_group_id: "canary", properties: { note: canaries.property, again: canaries.passphrase } });
        server.setFaults([{ method: "POST", action: "status", status: 429, retryAfter: 1, times: 1 }]);
        const rotated = await c.rotateToken(created.response.user_group.token, "canary");
        tokens.push(rotated.user_group.token);
        server.setFaults([{ method: "DELETE", action: "status", status: 503, times: 1 }]);
        await c.delete({ current_token: rotated.user_group.token, user_group_id: "canary" });
        await c.getOrCreate({ name: canaries.property, user_group_id: "", mapping: {} }).catch(() => undefined);
      });
      const spans = requestSpans();
      expect(spans.length).toBeGreaterThanOrEqual(7);
      const exported = JSON.stringify(sdk.spans.getFinishedSpans().map(spanData)) + JSON.stringify(await sdk.metrics());
      for (const canary of [...Object.values(canaries), ...tokens]) expect(exported).not.toContain(canary);
      // And the attributes are only the allowed ones.
      const names = new Set(spans.flatMap((s) => Object.keys(s.attributes)));
      expect([...names].sort()).toEqual(
        [
          "error.type",
          "http.request.method",
          "http.request.resend_count",
          "http.response.status_code",
          "server.address",
          "server.port",
          "url.path",
          "user_groups.rate_budget.wait_ms",
          "user_groups.retry_after_ms",
          "user_groups.user_group_id",
        ].sort(),
      );
    } finally {
      delete process.env["PULUMI_CONFIG_PASSPHRASE"];
    }
  });

  it("the attribute helper keeps only allowed names and types", () => {
    const given = {
      "http.request.method": "GET",
      "server.port": "443",
      "url.path": "x".repeat(300),
      token: "a-token",
      apiKey: "a-key",
      "user_groups.properties.note": "a value",
      "user_groups.retry_after_ms": Number.NaN,
    } as unknown as Attributes;
    expect(allowedAttributes(given)).toEqual({ "http.request.method": "GET", "url.path": "x".repeat(256) });
    expect(errorType(503)).toBe("503");
    expect(errorType("ECONNRESET")).toBe("ECONNRESET");
    expect(errorType("not a code: canary-password-91fa3e")).toBe("_OTHER");
  });
});
