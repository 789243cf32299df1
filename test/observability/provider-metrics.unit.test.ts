// The provider process's meter provider (provider/telemetry-sdk.ts): its instruments say when they record, so
// that only the answers after which something was recorded wait for an export, and what they record still
// reaches the SDK's reader unchanged.
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { recordingTracked } from "../../provider/telemetry-sdk";

describe("recordingTracked", () => {
  it("tells each add and record, not the making of instruments, and passes the values on", async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const provider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })] });
    let records = 0;
    const meter = recordingTracked(provider, () => records++).getMeter("pulumi-user-groups", "1.0.0");
    const duration = meter.createHistogram("http.client.request.duration", { unit: "s" });
    const retries = meter.createCounter("user_groups.http.retries");
    meter.createObservableGauge("not.tracked").addCallback((result) => result.observe(1));
    expect(records).toBe(0);
    duration.record(0.25, { "http.request.method": "GET" });
    duration.record(0.5, { "http.request.method": "GET" });
    retries.add(1, { "http.request.method": "PUT" });
    expect(records).toBe(3);
    await provider.forceFlush();
    const metrics = exporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const histogram = metrics.find((m) => m.descriptor.name === "http.client.request.duration")!;
    expect(histogram.descriptor.unit).toBe("s");
    expect(histogram.dataPoints[0]!.value).toMatchObject({ count: 2, sum: 0.75 });
    expect(histogram.dataPoints[0]!.attributes).toEqual({ "http.request.method": "GET" });
    expect(metrics.find((m) => m.descriptor.name === "user_groups.http.retries")!.dataPoints[0]!.value).toBe(1);
    expect(metrics.find((m) => m.descriptor.name === "not.tracked")!.dataPoints[0]!.value).toBe(1);
    expect(records).toBe(3);
    await provider.shutdown();
  });
});
