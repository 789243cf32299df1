// Off by default and free when off (issue #35 item 4): with no OpenTelemetry SDK
// registered, the client's spans are the API's no-op (nothing recorded, no
// attribute built), no trace context goes out, and the requests work as before.
import { context, metrics, propagation, type Span, trace, type Tracer } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import { lazyInstruments, packageMeter, packageTracer } from "../../provider/telemetry";
import { PACKAGE_VERSION } from "../../provider/version";

const KEY = "telemetry-off-key-0001";
let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
});
afterAll(async () => {
  await server.close();
});

describe("telemetry with no SDK registered", () => {
  it("makes no recording span, sends no traceparent, builds no attribute", async () => {
    // Nothing registered: the API's proxies and no-ops.
    expect(packageTracer(PACKAGE_VERSION).startSpan("probe").isRecording()).toBe(false);
    expect(trace.getActiveSpan()).toBeUndefined();
    // Watch the spans the client starts (through the API's proxy tracer, as the client does).
    const proxy = Object.getPrototypeOf(packageTracer(PACKAGE_VERSION)) as Tracer;
    const original = proxy.startSpan;
    const made: { span: Span; setAttributes: MockInstance; setStatus: MockInstance }[] = [];
    const startSpan = vi.spyOn(proxy, "startSpan").mockImplementation(function (this: Tracer, ...args: Parameters<Tracer["startSpan"]>) {
      const span = original.apply(this, args);
      made.push({ span, setAttributes: vi.spyOn(span, "setAttributes"), setStatus: vi.spyOn(span, "setStatus") });
      return span;
    });
    const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    try {
      await client.getOrCreate({ name: "Off", user_group_id: "off-1", mapping: {} });
      await client.update({ user_group_id: "off-1", name: "Off 2" });
      startSpan.mockRestore();
      expect(made).toHaveLength(2);
      for (const { span, setAttributes, setStatus } of made) {
        expect(span.isRecording()).toBe(false);
        expect(setAttributes).not.toHaveBeenCalled();
        expect(setStatus).not.toHaveBeenCalled();
      }
      const journal = server.journal();
      expect(journal).toHaveLength(2);
      for (const entry of journal) {
        expect(entry.traceparent).toBeUndefined();
        expect(entry.traceId).toBeUndefined();
      }
    } finally {
      await client.close();
    }
  });

  it("the API's no-op span records nothing, and propagation injects nothing", () => {
    // (That the client calls nothing on its spans is the test above, whose spies are on the spans the client made.)
    const span = packageTracer(PACKAGE_VERSION).startSpan("GET");
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext().traceId).toBe("0".repeat(32));
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), headers);
    expect(headers).toEqual({});
    // The meter is the no-op meter: its instruments keep nothing.
    const histogram = packageMeter(PACKAGE_VERSION).createHistogram("probe");
    expect(() => histogram.record(1)).not.toThrow();
    expect(metrics.getMeterProvider().constructor.name).toBe("NoopMeterProvider");
    // The client's instruments are not even made: it skips building a measurement's attributes.
    expect(lazyInstruments(PACKAGE_VERSION, () => "made")()).toBeUndefined();
  });
});
