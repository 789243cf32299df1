// The lease wait's span and measurement on a real PostgreSQL lease (docs/observability.md):
// the time waited, how often the run was refused, the holder's kind and epoch, the
// epoch taken; a wait that gives up is a failed span. With a real in-memory SDK.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trace } from "@opentelemetry/api";
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { StackLockTimeoutError } from "../../../provider/automation/backend";
import { withLockWait } from "../../../provider/automation/engine";
import { acquireRunLease, type Here } from "../../../provider/automation/lease";
import { PostgresLeaseStore } from "../../../provider/backends/postgres/lease-store";
import { leaseRules } from "../../../provider/automation/lease/record";
import { registerTestSdk, type TestSdk } from "../../client/telemetry-sdk";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";

function here(host: string): Here {
  return { host, pidAlive: () => false, pulumiRunning: () => false };
}

function waitPoints(all: ResourceMetrics): Array<{ attributes: Record<string, unknown>; value: { count: number } }> {
  return all.scopeMetrics.flatMap((scope) =>
    scope.metrics.filter((m) => m.descriptor.name === "user_groups.lease.wait").flatMap((m) => m.dataPoints as Array<{ attributes: Record<string, unknown>; value: { count: number } }>),
  );
}

describe("lease wait telemetry on PostgreSQL", () => {
  let sdk: TestSdk;
  let postgres: PostgresServer;
  beforeAll(async () => {
    sdk = registerTestSdk();
    postgres = await startPostgres();
  });
  afterAll(async () => {
    postgres?.stop();
    await sdk?.shutdown();
  });

  it("a run that waits for another host's lease: its span under the caller's, with refusals, holder, epochs; measured", async () => {
    const a = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "prod", { rules: leaseRules() });
    const b = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "prod", { rules: leaseRules() });
    try {
      const leaseA = await acquireRunLease(a, "prod", { here: here("pod-a") });
      sdk.spans.reset(); // the holder's own lease wait (none: 0 ms) is not this test's
      let released: Promise<void> | undefined;
      const caller = trace.getTracer("test");
      const { leaseB, parent } = await caller.startActiveSpan("caller", async (span) => {
        // The holder lets go once the waiter has been refused (it is then told before its first backoff).
        const got = await withLockWait({ stack: "prod", lockTimeoutMs: 30_000, onLockWait: () => void (released ??= leaseA.release()) }, () =>
          acquireRunLease(b, "prod", { here: here("pod-b") }),
        );
        span.end();
        return { leaseB: got, parent: span.spanContext().spanId };
      });
      await released;
      expect(leaseB.epoch).toBeGreaterThan(leaseA.epoch!);
      await leaseB.release();
      const waits = sdk.spans.getFinishedSpans().filter((s) => s.name === "user_groups.lease.wait");
      expect(waits).toHaveLength(1);
      expect(waits[0]!.parentSpanContext?.spanId).toBe(parent);
      expect(waits[0]!.attributes).toMatchObject({
        "user_groups.stack": "prod",
        "user_groups.lease.holder": "other_host",
        "user_groups.lease.holder_epoch": leaseA.epoch,
        "user_groups.lease.epoch": leaseB.epoch,
      });
      expect(waits[0]!.attributes["user_groups.lease.refusals"] as number).toBeGreaterThanOrEqual(1);
      expect(waits[0]!.attributes["user_groups.lease.wait_ms"] as number).toBeGreaterThan(0);
      expect(waitPoints(await sdk.metrics()).find((p) => p.attributes["user_groups.lease.holder"] === "other_host")?.value.count).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);

  it("a wait that times out: a failed span with error.type stack_lock_timeout", async () => {
    const a = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "held", { rules: leaseRules() });
    const b = new PostgresLeaseStore(postgres.backendUrl, "user-groups", "held", { rules: leaseRules() });
    try {
      const leaseA = await acquireRunLease(a, "held", { here: here("pod-a") });
      sdk.spans.reset();
      const error = await withLockWait({ stack: "held", lockTimeoutMs: 600 }, () => acquireRunLease(b, "held", { here: here("pod-b") })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StackLockTimeoutError);
      await leaseA.release();
      const [wait] = sdk.spans.getFinishedSpans().filter((s) => s.name === "user_groups.lease.wait");
      expect(wait!.status.code).toBe(2); // ERROR
      expect(wait!.attributes).toMatchObject({ "error.type": "stack_lock_timeout", "user_groups.lease.holder": "other_host" });
      expect(wait!.attributes["user_groups.lease.wait_ms"] as number).toBeGreaterThanOrEqual(500);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);
});
