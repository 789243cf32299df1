// `pulumi up --otel-traces grpc://<collector>` as a user runs it, with a YAML program
// using the plugin (`pulumi-resource-user-groups`), into a real OpenTelemetry
// Collector (issue #35 item 6; scripts/ensure-otelcol): the CLI's trace, under a
// job's TRACEPARENT, holds the plugin's server span, its `UserGroup create` and the
// HTTP requests, in one trace; and none of the run's secrets.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { ancestors, type CollectedSpan, type OtelCollector, renderSpanTree, startOtelCollector } from "../../testkit/otel-collector";
import { type CliEnv, createCliEnv } from "../plugin/support";
import { REPO_ROOT } from "../support/pulumi-env";

const tag = randomBytes(5).toString("hex");
const CANARY = {
  apiKey: `canary-engine-apikey-${tag}`,
  passphrase: `canary-engine-passphrase-${tag}`,
  property: `canary-engine-property-${tag}`,
  name: `Canary engine name ${tag}`,
};

const pluginBin = path.join(REPO_ROOT, ".work", `collector-engine-bin-${tag}`);
let server: FakeServer;
let collector: OtelCollector;
let env: CliEnv;

beforeAll(async () => {
  [server, collector] = await Promise.all([startFakeServer({ port: 0, apiKeys: [{ key: CANARY.apiKey, environment: "Customer" }] }), startOtelCollector()]);
  // The plugin from this checkout, found on PATH by the engine (as `pulumi-resource-user-groups` is when installed with npm).
  env = createCliEnv("collector-engine", [pluginBin]);
  mkdirSync(pluginBin, { recursive: true });
  writeFileSync(path.join(pluginBin, "pulumi-resource-user-groups"), `#!/bin/sh\nexec node ${JSON.stringify(path.join(REPO_ROOT, "dist/provider/plugin/main.js"))} "$@"\n`, { mode: 0o755 });
});
afterAll(async () => {
  await server?.close();
  await collector?.stop();
  env?.cleanup();
  rmSync(pluginBin, { recursive: true, force: true });
});

describe("pulumi up --otel-traces grpc:// into a real OpenTelemetry Collector", () => {
  it("the plugin's create and its HTTP requests in the CLI's trace, under the job's span, its HTTP metrics, with no secret", async () => {
    const dir = path.join(env.workDir, "yaml");
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, "Pulumi.yaml"),
      [
        "name: collector-engine",
        "runtime: yaml",
        "resources:",
        "  traced:",
        "    type: user-groups:index:UserGroup",
        "    properties:",
        `      name: ${JSON.stringify(CANARY.name)}`,
        "      userGroupId: traced-engine",
        "      properties:",
        `        secretish: ${JSON.stringify(CANARY.property)}`,
        "",
      ].join("\n"),
    );
    const runEnv = {
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: CANARY.apiKey,
      USER_GROUPS_ALLOW_INSECURE_HTTP: "1",
      PULUMI_CONFIG_PASSPHRASE: CANARY.passphrase,
    };
    await env.pulumi(["stack", "init", "dev"], { cwd: dir, env: runEnv });
    const traceId = randomBytes(16).toString("hex");
    const jobSpan = randomBytes(8).toString("hex");
    const destination = `grpc://${new URL(collector.grpcEndpoint).host}`;
    // The job's OTEL_* (OpenTelemetry's default protocol, OTLP/HTTP protobuf) reach the plugin through the engine: its HTTP metrics go there.
    await env.pulumi(["up", "--skip-preview", "--yes", "--otel-traces", destination], {
      cwd: dir,
      env: { ...runEnv, TRACEPARENT: `00-${traceId}-${jobSpan}-01`, OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint },
    });

    const mine = (all: CollectedSpan[]) => all.filter((s) => s.traceId === traceId);
    const chainOf = (spans: CollectedSpan[]) => {
      const request = spans.find((s) => s.kind === "CLIENT" && s.service === "pulumi-resource-user-groups");
      return request ? [request, ...ancestors(spans, request)] : [];
    };
    const spans = mine(await collector.waitForSpans((all) => chainOf(mine(all)).at(-1)?.parentSpanId === jobSpan, 30_000));
    const text = renderSpanTree(spans, ["http.response.status_code", "user_groups.outcome"]);
    const chain = chainOf(spans);
    const lineage = chain.map((s) => `${s.service}: ${s.name} (${s.kind})`);
    expect(lineage.slice(0, 4), text).toEqual([
      `pulumi-resource-user-groups: ${chain[0]!.name} (CLIENT)`,
      "pulumi-resource-user-groups: UserGroup create (INTERNAL)",
      "pulumi-resource-user-groups: pulumirpc.ResourceProvider/Create (SERVER)",
      "pulumi-cli: pulumirpc.ResourceProvider/Create (CLIENT)",
    ]);
    expect(chain.at(-1), text).toMatchObject({ name: "pulumi", service: "pulumi-cli", parentSpanId: jobSpan });
    expect(chain[1]!.attributes).toMatchObject({ "user_groups.operation": "create", "user_groups.user_group_id": "traced-engine", "user_groups.outcome": "ok" });
    const requests = spans.filter((s) => s.parentSpanId === chain[1]!.spanId);
    expect(requests.map((r) => r.name), text).toContain("GET");
    for (const r of requests) expect(r.attributes["http.response.status_code"]).toBe(200);

    // The plugin's HTTP metrics: the create's requests by method and status, each attempt's rate-budget wait.
    const points = await collector.waitForMetrics((all) =>
      ["http.client.request.duration", "user_groups.rate_budget.wait"].every((name) => all.some((p) => p.name === name && p.service === "pulumi-resource-user-groups")),
    );
    const durations = points.filter((p) => p.name === "http.client.request.duration" && p.service === "pulumi-resource-user-groups");
    expect(durations.some((p) => p.attributes["http.request.method"] === "GET" && p.attributes["http.response.status_code"] === 200 && p.unit === "s")).toBe(true);

    const token = server.groups().find((g) => g.user_group_id === "traced-engine")!.token;
    const exported = readFileSync(collector.tracesFile, "utf8") + readFileSync(collector.metricsFile, "utf8");
    for (const canary of [...Object.values(CANARY), token]) expect(exported).not.toContain(canary);
  });
});
