// The `user-groups` CLI exporting to a real OpenTelemetry Collector (issue #35 item
// 6): only the standard OTEL_* variables are set (OTLP over gRPC to the collector,
// scripts/ensure-otelcol), and the engine runs the CLI starts export their trace to
// the same collector (`--otel-traces grpc://...`, from those variables). An `up`
// and a `drift` after a change made behind the stack's back are each one trace:
// the command's span (under a GitOps job's TRACEPARENT) -> the operation -> the
// engine run -> the engine's `pulumi` root -> the provider's UserGroup operation ->
// its HTTP requests; with the metrics (the CLI's, and the provider processes' HTTP
// metrics); and none of the run's secrets.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { ancestors, type CollectedSpan, type OtelCollector, renderSpanTree, startOtelCollector } from "../../testkit/otel-collector";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const tag = randomBytes(5).toString("hex");
const CANARY = {
  apiKey: `canary-cli-apikey-${tag}`,
  passphrase: `canary-cli-passphrase-${tag}`,
  property: `canary-cli-property-${tag}`,
};
const { server, env, envVars } = useStackFixture({ label: "collector-cli", apiKeys: [CANARY.apiKey] });

let collector: OtelCollector;
beforeAll(async () => {
  collector = await startOtelCollector();
});
afterAll(async () => {
  await collector?.stop();
});

/**
 * Runs the built CLI with OTEL_* pointing at the collector (OTLP/gRPC, unless `otel` says otherwise), as a GitOps
 * job whose span is `jobSpan` of `traceId`.
 */
function tracedCli(traceId: string, jobSpan: string, args: readonly string[], otel?: Record<string, string>): Promise<CliRun> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (name.startsWith("OTEL_") || name === "TRACEPARENT" || name === "USER_GROUPS_ENGINE_OTEL_TRACES") delete base[name];
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: {
      ...base,
      ...envVars({ GITHUB_STEP_SUMMARY: "", PULUMI_CONFIG_PASSPHRASE: CANARY.passphrase }),
      ...(otel ?? { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint }),
      OTEL_SERVICE_NAME: "gitops-job",
      // The key's rate budget on (the global test setup turns it off): each request says how long it waited for it.
      USER_GROUPS_RATE_LIMIT: "600/60",
      TRACEPARENT: `00-${traceId}-${jobSpan}-01`,
    },
  });
}

const SHOWN = ["user_groups.group_count", "user_groups.drift.drifted_count", "user_groups.lease.wait_ms", "http.response.status_code", "user_groups.rate_budget.wait_ms"];

/**
 * Waits until the trace holds the operation span `operation` of the group with its HTTP requests, and
 * the chain from its first request up to the job's span; answers the trace's spans.
 */
async function traceOf(traceId: string, jobSpan: string, operation: string): Promise<{ spans: CollectedSpan[]; text: string; chain: CollectedSpan[] }> {
  const mine = (all: CollectedSpan[]) => all.filter((s) => s.traceId === traceId);
  const chainOf = (spans: CollectedSpan[]) => {
    const op = spans.find((s) => s.name === operation);
    const request = op && spans.find((s) => s.parentSpanId === op.spanId);
    return request ? [request, ...ancestors(spans, request)] : [];
  };
  const spans = mine(await collector.waitForSpans((all) => chainOf(mine(all)).at(-1)?.parentSpanId === jobSpan, 30_000));
  return { spans, text: renderSpanTree(spans, SHOWN), chain: chainOf(spans) };
}

const lineageOf = (chain: readonly CollectedSpan[]) => chain.map((s) => `${s.service}: ${s.name}`);

describe("user-groups with OTEL_* exporting to a real OpenTelemetry Collector", () => {
  it("up, then drift after an out-of-band change: each one trace from the job's span to the provider's HTTP requests, with metrics and no secret", async () => {
    const file = path.join(env.workDir, "groups.yaml");
    writeFileSync(file, `groups:\n  - { name: "Traced", userGroupId: traced, properties: { note: "${CANARY.property}" } }\n`);

    // up
    const upTrace = randomBytes(16).toString("hex");
    const upJob = randomBytes(8).toString("hex");
    const up = await tracedCli(upTrace, upJob, ["up", "--file", file, "--yes"]);
    expect(up.code, up.stderr).toBe(0);
    const upRun = await traceOf(upTrace, upJob, "UserGroup create");
    const upLineage = lineageOf(upRun.chain);
    const upExpected = [
      "pulumi-user-groups-dynamic-provider: UserGroup create",
      "pulumi-user-groups-dynamic-provider: pulumirpc.ResourceProvider/Create",
      "pulumi-cli: pulumirpc.ResourceProvider/Create",
      "pulumi-cli: pulumi",
      "gitops-job: user_groups.engine.up",
      "gitops-job: user-groups up",
    ];
    expect(upLineage.filter((l) => upExpected.includes(l)), upRun.text).toEqual(upExpected);
    expect(upRun.chain[0]).toMatchObject({ kind: "CLIENT", service: "pulumi-user-groups-dynamic-provider" });
    expect(upRun.chain.at(-1)).toMatchObject({ name: "user-groups up", parentSpanId: upJob, attributes: expect.objectContaining({ "user_groups.cli.command": "up", "user_groups.outcome": "ok" }) });

    // Its timings: the run lease's wait before the engine run, each HTTP attempt's rate-budget wait.
    const upCommand = upRun.chain.at(-1)!;
    const leaseWait = upRun.spans.find((s) => s.name === "user_groups.lease.wait" && ancestors(upRun.spans, s).some((a) => a.spanId === upCommand.spanId));
    expect(leaseWait?.attributes["user_groups.lease.wait_ms"], upRun.text).toEqual(expect.any(Number));
    const upEngine = upRun.chain.find((s) => s.name === "user_groups.engine.up")!;
    expect(upEngine.startMs).toBeGreaterThanOrEqual(leaseWait!.endMs - 2);
    const upRequests = upRun.spans.filter((s) => s.kind === "CLIENT" && s.service === "pulumi-user-groups-dynamic-provider");
    expect(upRequests.length).toBeGreaterThanOrEqual(1);
    for (const r of upRequests) expect(r.attributes["user_groups.rate_budget.wait_ms"], upRun.text).toEqual(expect.any(Number));

    // Someone renames the group behind the stack's back.
    const client = new UserGroupsClient({ baseUrl: server.url, apiKey: CANARY.apiKey });
    try {
      await client.update({ user_group_id: "traced", name: "Renamed by hand" });
    } finally {
      await client.close();
    }

    // drift
    const driftTrace = randomBytes(16).toString("hex");
    const driftJob = randomBytes(8).toString("hex");
    const drift = await tracedCli(driftTrace, driftJob, ["drift"]);
    expect(drift.code, `${drift.stdout}\n${drift.stderr}`).not.toBe(0); // drift found: a non-zero exit, as CI wants
    const driftRun = await traceOf(driftTrace, driftJob, "UserGroup read");
    const driftLineage = lineageOf(driftRun.chain);
    expect(driftLineage.slice(0, 4), driftRun.text).toEqual([
      `pulumi-user-groups-dynamic-provider: ${driftRun.chain[0]!.name}`,
      "pulumi-user-groups-dynamic-provider: UserGroup read",
      "pulumi-user-groups-dynamic-provider: pulumirpc.ResourceProvider/Read",
      "pulumi-cli: pulumirpc.ResourceProvider/Read",
    ]);
    expect(driftLineage).toContain("pulumi-cli: pulumi");
    const command = driftRun.chain.at(-1)!;
    expect(command).toMatchObject({ name: "user-groups drift", service: "gitops-job", parentSpanId: driftJob, attributes: expect.objectContaining({ "user_groups.cli.command": "drift" }) });
    const operation = driftRun.spans.find((s) => s.name === "user_groups.drift");
    expect(operation, driftRun.text).toMatchObject({ parentSpanId: command.spanId, attributes: expect.objectContaining({ "user_groups.group_count": 1, "user_groups.drift.drifted_count": 1 }) });
    const engineRun = driftRun.chain.find((s) => s.name.startsWith("user_groups.engine."));
    expect(engineRun, driftRun.text).toBeDefined();
    expect(ancestors(driftRun.spans, engineRun!).map((s) => s.spanId)).toContain(operation!.spanId);

    // OpenTelemetry's default protocol, OTLP/HTTP (protobuf), to the collector's HTTP port, with only the endpoint
    // named; the engine's trace then goes where USER_GROUPS_ENGINE_OTEL_TRACES says (gRPC here): still one trace.
    const httpTrace = randomBytes(16).toString("hex");
    const httpJob = randomBytes(8).toString("hex");
    const again = await tracedCli(httpTrace, httpJob, ["drift"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
      USER_GROUPS_ENGINE_OTEL_TRACES: `grpc://${new URL(collector.grpcEndpoint).host}`,
    });
    expect(again.code, again.stderr).not.toBe(0);
    const httpRun = await traceOf(httpTrace, httpJob, "UserGroup read");
    expect(lineageOf(httpRun.chain), httpRun.text).toEqual(expect.arrayContaining(["pulumi-cli: pulumi", "gitops-job: user_groups.drift", "gitops-job: user-groups drift"]));

    // The CLI's metrics: the engine runs of both commands.
    const points = await collector.waitForMetrics((all) => all.filter((p) => p.name === "user_groups.engine.runs" && p.service === "gitops-job").length >= 2);
    expect(points.filter((p) => p.name === "user_groups.engine.run.duration" && p.service === "gitops-job").every((p) => p.unit === "s")).toBe(true);

    // The provider processes' HTTP metrics (the engine passes OTEL_* on to them; the preload exports them, flushed
    // before each answer): request durations by method and status, and the rate budget's waits, from the dynamic
    // provider's `service.name`; over gRPC (up, drift) and OTLP/HTTP protobuf (the last drift) alike.
    const PROVIDER = "pulumi-user-groups-dynamic-provider";
    const providerPoints = await collector.waitForMetrics(
      (all) =>
        all.some((p) => p.name === "http.client.request.duration" && p.service === PROVIDER && p.attributes["http.request.method"] === "PUT") &&
        all.some((p) => p.name === "user_groups.rate_budget.wait" && p.service === PROVIDER),
    );
    const durations = providerPoints.filter((p) => p.name === "http.client.request.duration" && p.service === PROVIDER);
    for (const point of durations) {
      expect(point).toMatchObject({ type: "histogram", unit: "s" });
      expect(Object.keys(point.attributes).sort()).toEqual(expect.arrayContaining(["http.request.method", "server.address", "server.port"]));
      expect(point.count).toBeGreaterThanOrEqual(1);
    }
    expect(durations.some((p) => p.attributes["http.request.method"] === "GET" && p.attributes["http.response.status_code"] === 200)).toBe(true);
    expect(durations.some((p) => p.attributes["http.request.method"] === "PUT" && p.attributes["http.response.status_code"] === 200)).toBe(true);
    const budgetWaits = providerPoints.filter((p) => p.name === "user_groups.rate_budget.wait" && p.service === PROVIDER);
    expect(budgetWaits.every((p) => p.unit === "s" && Object.keys(p.attributes).length === 0)).toBe(true);
    expect(Math.max(...budgetWaits.map((p) => p.count ?? 0))).toBeGreaterThanOrEqual(1);

    // Metrics alone: the engine's traces off (no --otel-traces, so no receiver for the providers), OTEL_* still asking
    // for metrics: the preload is still in the engine run's NODE_OPTIONS and the provider's metrics still arrive (at a
    // collector of their own, so that every point is this run's).
    const quietCollector = await startOtelCollector();
    try {
      const quietTrace = randomBytes(16).toString("hex");
      const quiet = await tracedCli(quietTrace, randomBytes(8).toString("hex"), ["drift"], {
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_ENDPOINT: quietCollector.grpcEndpoint,
        USER_GROUPS_ENGINE_OTEL_TRACES: "off",
      });
      expect(quiet.code, quiet.stderr).not.toBe(0);
      const quietPoints = await quietCollector.waitForMetrics((all) => all.some((p) => p.name === "http.client.request.duration" && p.service === PROVIDER));
      // The drift's read looks the group up (a PUT of the user API, as in the tree in docs/observability.md).
      expect(quietPoints.some((p) => p.name === "http.client.request.duration" && p.service === PROVIDER && p.attributes["http.response.status_code"] === 200)).toBe(true);
      const quietSpans = await quietCollector.waitForSpans((all) => all.some((span) => span.name === "user-groups drift"));
      expect(quietSpans.filter((span) => span.service !== "gitops-job").map((span) => `${span.service}: ${span.name}`)).toEqual([]);
    } finally {
      await quietCollector.stop();
    }

    // No secret anywhere the collector wrote: the API key, the passphrase, the property value, the group's token.
    const token = server.groups().find((g) => g.user_group_id === "traced")!.token;
    const exported = readFileSync(collector.tracesFile, "utf8") + readFileSync(collector.metricsFile, "utf8");
    for (const canary of [...Object.values(CANARY), token]) expect(exported).not.toContain(canary);
  });
});
