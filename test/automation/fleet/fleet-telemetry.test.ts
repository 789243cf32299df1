// The fleet's spans and metrics (docs/observability.md, "What is traced", "What is
// measured") with a real in-memory OpenTelemetry SDK: a service's span is the parent
// of its ensure, queued time, batch size and shard are on it, the batch and its
// engine run nest under it; a lease wait and a takeover have their spans; the
// metrics count what happened. File backend, the fake server.
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import path from "node:path";
import { trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../../provider/automation";
import { PROJECT_NAME } from "../../../provider/automation/engine";
import { acquireRunLease } from "../../../provider/automation/lease";
import { FileLeaseStore } from "../../../provider/backends/file/lease-store";
import { leaseRules } from "../../../provider/automation/lease/record";
import { registerTestSdk, spanData, type TestSdk } from "../../client/telemetry-sdk";
import { useStackFixture } from "../../support/stack-fixture";

const KEY = "fleet-telemetry-key-0001";
const PASSPHRASE = "fleet-telemetry-passphrase-canary-7f3a";
const PROPERTY_CANARY = "property-canary-c0ffee-91";
const { server, env, runOptions } = useStackFixture({ label: "fleet-telemetry", apiKeys: [KEY], passphrase: PASSPHRASE });

let sdk: TestSdk;
beforeAll(() => {
  sdk = registerTestSdk();
});
afterAll(async () => {
  await sdk?.shutdown();
});

function fleetOf(stack: string, onLockWait?: () => void): UserGroupFleet {
  return new UserGroupFleet(runOptions(stack, { workDir: path.join(env.workDir, stack), lockTimeoutMs: 60_000, ...(onLockWait ? { onLockWait } : {}) }));
}

const byName = (name: string) => sdk.spans.getFinishedSpans().filter((span) => span.name === name);
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

function metricPoints(all: ResourceMetrics, name: string): Array<{ attributes: Record<string, unknown>; value: unknown }> {
  return all.scopeMetrics.flatMap((scope) => scope.metrics.filter((metric) => metric.descriptor.name === name).flatMap((metric) => metric.dataPoints as Array<{ attributes: Record<string, unknown>; value: unknown }>));
}

describe("fleet telemetry", () => {
  it("puts each ensure under the service's span, with its queued time, batch size and shard; the batch and its engine run under it", async () => {
    sdk.spans.reset();
    const fleet = fleetOf("signups");
    const handler = trace.getTracer("test-service");
    try {
      // Two sign-ups, each in its own HTTP handler's span, joining one batch.
      const signUp = (id: string) =>
        handler.startActiveSpan(`POST /signup ${id}`, async (span) => {
          try {
            return await fleet.ensure({ name: `${id} Inc`, userGroupId: id, properties: { secret: PROPERTY_CANARY } });
          } finally {
            span.end();
          }
        });
      const results = await Promise.all([signUp("alpha"), signUp("beta")]);
      expect(results.map((r) => r.change)).toEqual(["create", "create"]);
    } finally {
      await fleet.close();
    }
    const handlers = sdk.spans.getFinishedSpans().filter((span) => span.name.startsWith("POST /signup"));
    const ensures = byName("user_groups.fleet.ensure");
    expect(ensures).toHaveLength(2);
    for (const ensure of ensures) {
      const id = ensure.attributes["user_groups.user_group_id"];
      const own = handlers.find((h) => h.name === `POST /signup ${String(id)}`)!;
      // The service's span is the parent, though the call ran later in a batch.
      expect(parentOf(ensure)).toBe(idOf(own));
      expect(ensure.spanContext().traceId).toBe(own.spanContext().traceId);
      expect(ensure.attributes).toMatchObject({ "user_groups.operation": "ensure", "user_groups.batch.size": 2, "user_groups.shard": 0, "user_groups.outcome": "create" });
      expect(ensure.attributes["user_groups.queued_ms"]).toEqual(expect.any(Number));
      expect(ensure.attributes["user_groups.queued_ms"] as number).toBeGreaterThanOrEqual(0);
    }
    const [batch] = byName("user_groups.fleet.batch");
    expect(batch).toBeDefined();
    // Parented by the first call's span, linked with the other's (and it links back).
    const first = ensures.find((e) => idOf(e) === parentOf(batch!))!;
    const other = ensures.find((e) => e !== first)!;
    expect(first).toBeDefined();
    expect(batch!.links.map((l) => l.context.spanId)).toEqual([idOf(other)]);
    expect(other.links.map((l) => l.context.spanId)).toEqual([idOf(batch!)]);
    // The shard planning, the lease wait and the engine run nest under the batch.
    const [plan] = byName("user_groups.shards.plan");
    expect(parentOf(plan!)).toBe(idOf(batch!));
    const up = byName("user_groups.engine.up");
    expect(up).toHaveLength(1);
    expect(up[0]!.attributes).toMatchObject({ "user_groups.operation": "up", "user_groups.stack": "signups", "user_groups.shard": 0 });
    expect(parentOf(up[0]!)).toBe(idOf(batch!));
    const waits = byName("user_groups.lease.wait").filter((w) => parentOf(w) === idOf(batch!));
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(waits[0]!.attributes["user_groups.lease.wait_ms"]).toEqual(expect.any(Number));
    // Opening the shard's stack and reading its state (before the lease wait) have their spans under the batch.
    const opens = byName("user_groups.stack.open");
    expect(opens.length).toBeGreaterThanOrEqual(1);
    expect(opens.some((open) => parentOf(open) === idOf(batch!))).toBe(true);
    const reads = byName("user_groups.state.read").filter((read) => parentOf(read) === idOf(batch!));
    expect(reads.length).toBeGreaterThanOrEqual(1);
    // The stack's name only (a look for a stack not made yet fails with stack_not_found: a new shard's first read).
    for (const span of reads) expect(span.attributes).toEqual({ "user_groups.stack": "signups" });
    for (const span of opens) expect(span.attributes).toMatchObject({ "user_groups.stack": "signups" });
    for (const span of opens) expect([undefined, "stack_not_found"]).toContain(span.attributes["error.type"]);
    expect(opens.some((open) => open.attributes["error.type"] === undefined && parentOf(open) === idOf(batch!))).toBe(true);
    const startOf = (span: ReadableSpan) => span.startTime[0] * 1e9 + span.startTime[1];
    const endOf = (span: ReadableSpan) => span.endTime[0] * 1e9 + span.endTime[1];
    expect(endOf(reads[0]!)).toBeLessThanOrEqual(startOf(up[0]!));
    expect(startOf(reads[0]!)).toBeGreaterThanOrEqual(endOf(plan!) - 1e6);
    // The engine run starts after the lease is taken.
    expect(up[0]!.startTime[0] * 1e9 + up[0]!.startTime[1]).toBeGreaterThanOrEqual(waits[0]!.endTime[0] * 1e9 + waits[0]!.endTime[1] - 1e6);

    const metrics = await sdk.metrics();
    const durations = metricPoints(metrics, "user_groups.fleet.request.duration").filter((p) => p.attributes["user_groups.outcome"] === "create");
    expect(durations.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(2);
    const sizes = metricPoints(metrics, "user_groups.fleet.batch.size");
    expect(sizes.some((p) => (p.value as { max: number }).max === 2)).toBe(true);
    const runs = metricPoints(metrics, "user_groups.engine.runs").filter((p) => p.attributes["user_groups.operation"] === "up");
    expect(runs.reduce((n, p) => n + (p.value as number), 0)).toBeGreaterThanOrEqual(1);
    expect(metricPoints(metrics, "user_groups.engine.run.duration").length).toBeGreaterThan(0);
    expect(metricPoints(metrics, "user_groups.lease.wait").length).toBeGreaterThan(0);

    // Nothing secret in any span or metric.
    const text = JSON.stringify({ spans: sdk.spans.getFinishedSpans().map(spanData), metrics });
    for (const canary of [PROPERTY_CANARY, PASSPHRASE, KEY, ...tokensOf(server)]) expect(text).not.toContain(canary);
  }, 120_000);

  it("traces list and remove: the list's count, the remove's outcome and its destroy run under its batch", async () => {
    sdk.spans.reset();
    const fleet = fleetOf("signups");
    try {
      expect((await fleet.list()).map((g) => g.userGroupId).sort()).toEqual(["alpha", "beta"]);
      expect((await fleet.remove("beta")).change).toBe("delete");
    } finally {
      await fleet.close();
    }
    const [list] = byName("user_groups.fleet.list");
    expect(list!.attributes).toMatchObject({ "user_groups.operation": "list", "user_groups.group_count": 2 });
    const [remove] = byName("user_groups.fleet.remove");
    expect(remove!.attributes).toMatchObject({ "user_groups.operation": "remove", "user_groups.user_group_id": "beta", "user_groups.outcome": "delete", "user_groups.shard": 0 });
    const batch = byName("user_groups.fleet.batch").find((b) => parentOf(b) === idOf(remove!));
    const [destroy] = byName("user_groups.engine.destroy");
    expect(parentOf(destroy!)).toBe(idOf(batch!));
  }, 120_000);

  it("records a lease wait: time waited, refusals, the holder's kind", async () => {
    const stack = "waits";
    // The holder lets go 1 s after the run first found the lease held.
    let release: NodeJS.Timeout | undefined;
    let releaseHeld = () => {};
    const fleet = fleetOf(stack, () => {
      release ??= setTimeout(() => releaseHeld(), 1_000);
    });
    // The stack exists first (a run of its own), then another run of this host holds its lease for a while.
    await fleet.ensure({ name: "First", userGroupId: "first" });
    await fleet.signUps?.closeAll(); // its sign-up adopted, the lease let go
    sdk.spans.reset();
    const store = new FileLeaseStore(env.backendDir, PROJECT_NAME, stack, { rules: leaseRules() });
    const held = await acquireRunLease(store, stack);
    releaseHeld = () => void held.release();
    try {
      const result = await fleet.ensure({ name: "Second", userGroupId: "second" });
      expect(result.change).toBe("create");
    } finally {
      clearTimeout(release);
      await held.release();
      await fleet.close();
    }
    const waited = byName("user_groups.lease.wait").find((w) => (w.attributes["user_groups.lease.refusals"] as number) > 0);
    expect(waited).toBeDefined();
    expect(waited!.attributes).toMatchObject({ "user_groups.stack": stack, "user_groups.lease.holder": "this_host" });
    expect(waited!.attributes["user_groups.lease.wait_ms"] as number).toBeGreaterThanOrEqual(1_000);
    const metrics = await sdk.metrics();
    expect(metricPoints(metrics, "user_groups.lease.wait").some((p) => p.attributes["user_groups.lease.holder"] === "this_host")).toBe(true);
  }, 120_000);

  it("records a takeover of a dead run: what was taken over, under the batch", async () => {
    const stack = "takeovers";
    const fleet = fleetOf(stack);
    await fleet.ensure({ name: "Before", userGroupId: "before" });
    await fleet.signUps?.closeAll(); // its sign-up adopted, the lease let go
    // A run of this host that died holding the lease (a pid that has exited): the next run takes it over.
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid!;
    const now = Date.now();
    const store = new FileLeaseStore(env.backendDir, PROJECT_NAME, stack, { rules: leaseRules() });
    const taken = await store.tryAcquire({ runId: "dead-run-0001", host: hostname(), pid: dead, startedAt: now, renewedAt: now });
    expect(taken.acquired).toBe(true);
    sdk.spans.reset();
    try {
      expect((await fleet.ensure({ name: "After", userGroupId: "after" })).change).toBe("create");
    } finally {
      await fleet.close();
    }
    const [takeover] = byName("user_groups.takeover");
    expect(takeover).toBeDefined();
    expect(takeover!.attributes).toMatchObject({ "user_groups.stack": stack, "user_groups.takeover.dead_runs": 1, "user_groups.takeover.adopted_count": 0 });
    // Under the batch of this call (the first call's batch may end after the reset: it ends once its run is cleaned up).
    const [ensure] = byName("user_groups.fleet.ensure");
    const batch = byName("user_groups.fleet.batch").find((b) => parentOf(b) === idOf(ensure!));
    expect(parentOf(takeover!)).toBe(idOf(batch!));
    const metrics = await sdk.metrics();
    expect(metricPoints(metrics, "user_groups.takeovers").reduce((n, p) => n + (p.value as number), 0)).toBeGreaterThanOrEqual(1);
  }, 120_000);
});

/** The tokens the fake server issued (never in telemetry). */
function tokensOf(fake: typeof server): string[] {
  return fake.groups().map((g) => g.token);
}
