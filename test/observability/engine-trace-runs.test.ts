// Engine runs of the library inside the caller's trace: engineTraceOptions (the
// TRACEPARENT of the active span, `--otel-traces` and the preload in
// NODE_OPTIONS), the destination's rule (USER_GROUPS_ENGINE_OTEL_TRACES, or the
// application's OTLP gRPC endpoint), and a real provisioning run under a span of
// the caller's whose engine trace (the CLI's file export) hangs under that span,
// down to the HTTP requests. And the preload costs nothing when tracing is off.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpanStatusCode } from "@opentelemetry/api";
import { provisionUserGroups } from "../../provider/automation";
import { ENGINE_OTEL_TRACES_ENV, engineTraceDestination, engineTraceOptions } from "../../provider/automation/engine";
import { REPO_ROOT } from "../support/pulumi-env";
import { useStackFixture } from "../support/stack-fixture";
import { ancestors, childrenOf, described, readTraceFile, SPAN_KIND } from "./otlp-file";

const PRELOAD = path.join(REPO_ROOT, "dist/provider/telemetry-preload.js");
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = tracerProvider.getTracer("engine-trace-runs-test");

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
});
afterAll(async () => {
  trace.disable();
  context.disable();
  await tracerProvider.shutdown();
});

describe("engineTraceOptions", () => {
  it("is empty with no span recording and no destination", () => {
    expect(engineTraceOptions()).toEqual({ envVars: {}, args: [] });
    // The API's no-op span (no SDK in its context) is not recording either.
    const nonRecording = trace.wrapSpanContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 });
    expect(context.with(trace.setSpan(context.active(), nonRecording), () => engineTraceOptions())).toEqual({ envVars: {}, args: [] });
  });

  it("carries the active span as TRACEPARENT, and a destination as --otel-traces with the preload", () => {
    tracer.startActiveSpan("caller", (span) => {
      const { traceId, spanId } = span.spanContext();
      expect(engineTraceOptions()).toEqual({ envVars: { TRACEPARENT: `00-${traceId}-${spanId}-01` }, args: [] });
      const withDestination = engineTraceOptions("grpc://127.0.0.1:4317");
      expect(withDestination.args).toEqual(["--otel-traces", "grpc://127.0.0.1:4317"]);
      expect(withDestination.envVars).toEqual({ TRACEPARENT: `00-${traceId}-${spanId}-01`, NODE_OPTIONS: `--require "${realpathSync(PRELOAD)}"` });
      span.end();
    });
  });

  it("gives the preload without --otel-traces when the run's OTEL_* ask for the providers' metrics", () => {
    expect(engineTraceOptions(undefined, true)).toEqual({ envVars: { NODE_OPTIONS: `--require "${realpathSync(PRELOAD)}"` }, args: [] });
    expect(engineTraceOptions(undefined, false)).toEqual({ envVars: {}, args: [] });
  });

  it("takes the destination from USER_GROUPS_ENGINE_OTEL_TRACES, else from an OTLP gRPC exporter's endpoint", () => {
    expect(engineTraceDestination({})).toBeUndefined();
    expect(engineTraceDestination({ [ENGINE_OTEL_TRACES_ENV]: "file:///tmp/engine.json" })).toBe("file:///tmp/engine.json");
    expect(engineTraceDestination({ [ENGINE_OTEL_TRACES_ENV]: "off", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317" })).toBeUndefined();
    expect(engineTraceDestination({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317" })).toBe("grpc://collector:4317");
    expect(engineTraceDestination({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b" })).toBe("grpc://b:443");
    expect(engineTraceDestination({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBeUndefined();
    expect(() => engineTraceDestination({ [ENGINE_OTEL_TRACES_ENV]: "ftp://collector" })).toThrow(expect.objectContaining({ code: "invalid_trace_destination" }));
  });

  // Issue #39, item 5: whatever could be a credential would be on the engine's command line (`--otel-traces`).
  it.each([
    ["a password", "https://user:hunter2-canary@collector/v1/traces", "user name or password"],
    ["a query", "https://collector/v1/traces?api_key=hunter2-canary", "query (?...)"],
    ["a query of a grpc:// collector", "grpc://collector:4317/?token=hunter2-canary", "query (?...)"],
    ["a query in a file:// destination", "file:///tmp/engine.json?hunter2-canary", "query (?...)"],
    ["a fragment", "https://collector/v1/traces#hunter2-canary", "fragment (#...)"],
    ["an empty query", "https://collector/v1/traces?", "query (?...)"],
  ])("refuses %s, naming the variable and never showing its value", (_what, destination, why) => {
    let refused: unknown;
    try {
      engineTraceDestination({ [ENGINE_OTEL_TRACES_ENV]: destination });
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: "invalid_trace_destination" });
    const message = String((refused as Error).message);
    expect(message).toContain(`${ENGINE_OTEL_TRACES_ENV} must not hold a`);
    expect(message).toContain(why);
    expect(message).not.toContain("hunter2-canary");
    expect(message).not.toMatch(/\/\/collector|v1\/traces|engine\.json/);
  });
});

describe("a provisioning run under the caller's span", { timeout: 120_000 }, () => {
  const { runOptions, envVars, server } = useStackFixture({ label: "engine-trace-runs", passphrase: "engine-trace-runs-passphrase" });
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "engine-trace-runs-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("puts the engine's root span, the provider's call and its HTTP requests under the caller's span", async () => {
    const file = path.join(dir, "engine.json");
    const callerSpan = await tracer.startActiveSpan("sign-up", async (span) => {
      await provisionUserGroups({
        ...runOptions("prod"),
        envVars: envVars({ [ENGINE_OTEL_TRACES_ENV]: `file://${file}` }),
        groups: [{ name: "Traced", userGroupId: "traced-run", mapping: {} }],
      });
      span.end();
      return span.spanContext();
    });
    // A file destination holds the trace of the last engine run (the up).
    const spans = readTraceFile(file);
    const root = spans.find((span) => span.service === "pulumi-cli" && span.name === "pulumi");
    expect(root, described(spans).join(", ")).toBeDefined();
    expect(root!.traceId).toBe(callerSpan.traceId);
    // Its parent is the run's engine span (the active span when the engine started), under the operation's, under the caller's.
    const ours = exporter.getFinishedSpans();
    const engineRun = ours.find((span) => span.spanContext().spanId === root!.parentSpanId);
    expect(engineRun?.name).toBe("user_groups.engine.up");
    const operation = ours.find((span) => span.spanContext().spanId === engineRun!.parentSpanContext?.spanId);
    expect(operation?.name).toBe("user_groups.provision.up");
    expect(operation!.parentSpanContext?.spanId).toBe(callerSpan.spanId);
    const create = spans.find((span) => span.name === "UserGroup create");
    expect(create?.attributes["user_groups.user_group_id"]).toBe("traced-run");
    const chain = ancestors(spans, create!);
    expect(chain[0]).toMatchObject({ service: "pulumi-user-groups-dynamic-provider", name: "pulumirpc.ResourceProvider/Create", kind: SPAN_KIND.SERVER });
    expect(chain[1]).toMatchObject({ service: "pulumi-cli", name: "pulumirpc.ResourceProvider/Create", kind: SPAN_KIND.CLIENT });
    expect(chain.at(-1)?.spanId).toBe(root!.spanId);
    expect(childrenOf(spans, create!).map((span) => span.name)).toContain("GET");
    // The run's secrets travel in the engine's environment: none of them is in its trace.
    const text = readFileSync(file, "utf8");
    const token = server.groups().find((group) => group.user_group_id === "traced-run")?.token;
    for (const secret of [envVars().USER_GROUPS_API_KEY, "engine-trace-runs-passphrase", token]) {
      expect(secret).toBeTruthy();
      expect(text.includes(secret!)).toBe(false);
    }
  });

  it("an operation's span records a failure by its code, never its message, and the HTTP spans are its children", async () => {
    exporter.reset();
    // From dist/, as the providers run it (its HTTP client is required lazily, which the sources under vitest cannot).
    const { UserGroupLifecycle } = require(path.join(REPO_ROOT, "dist/provider/logic/lifecycle.js")) as typeof import("../../provider/logic/lifecycle");
    const lifecycle = new UserGroupLifecycle({ env: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: envVars().USER_GROUPS_API_KEY, USER_GROUPS_RATE_LIMIT: "off" }, debugSink: () => {} });
    const inputs = { name: "Taken name", userGroupId: "traced-run", mapping: {}, adoptExisting: false, properties: { note: "property-canary" } };
    await expect(tracer.startActiveSpan("caller", async (span) => lifecycle.create(inputs).finally(() => span.end()))).rejects.toMatchObject({ code: "user_group_exists" });
    const spans = exporter.getFinishedSpans();
    const create = spans.find((span) => span.name === "UserGroup create");
    const caller = spans.find((span) => span.name === "caller");
    expect(create?.parentSpanContext?.spanId).toBe(caller?.spanContext().spanId);
    expect(create?.status.code).toBe(SpanStatusCode.ERROR);
    expect(create?.attributes).toEqual({ "user_groups.operation": "create", "user_groups.user_group_id": "traced-run", "error.type": "user_group_exists", "user_groups.outcome": "error" });
    expect(create?.events).toEqual([]);
    const requests = spans.filter((span) => span.parentSpanContext?.spanId === create?.spanContext().spanId);
    expect(requests.map((span) => span.name)).toContain("GET");
    expect(JSON.stringify(spans.map((span) => [span.name, span.attributes]))).not.toMatch(/property-canary|Taken name/);
  });
});

describe("the preload when tracing is off", () => {
  /** The modules of the OpenTelemetry SDK a node process with the preload has loaded. */
  function sdkModulesLoaded(script: string, env: NodeJS.ProcessEnv): string[] {
    const out = execFileSync(process.execPath, ["--require", PRELOAD, script], { env: { PATH: process.env.PATH, ...env }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return (JSON.parse(out) as string[]).filter((file) => /@opentelemetry[\\/](sdk-|exporter-|context-async-hooks|resources)/.test(file));
  }
  const PRINT = "process.stdout.write(JSON.stringify(Object.keys(require.cache)))";
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "engine-trace-preload-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("loads no SDK without the engine's receiver address, nor in a process that is not a dynamic provider", () => {
    // Where Pulumi's dynamic-provider host lives (the preload knows it by its path).
    const providerMain = path.join(dir, "node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js");
    mkdirSync(path.dirname(providerMain), { recursive: true });
    symlinkSync(path.join(REPO_ROOT, "node_modules/@grpc"), path.join(dir, "node_modules/@grpc"), "dir"); // the host's grpc-js
    writeFileSync(providerMain, PRINT);
    const other = path.join(dir, "program.js");
    writeFileSync(other, PRINT);
    const receiver = { PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:1" };

    expect(sdkModulesLoaded(providerMain, {})).toEqual([]);
    expect(sdkModulesLoaded(other, receiver)).toEqual([]);
    // The control: a dynamic provider under --otel-traces loads the SDK.
    expect(sdkModulesLoaded(providerMain, receiver).length).toBeGreaterThan(0);

    // OTEL_* asking for OTLP metrics (inherited from the engine's environment): the metrics SDK and the protocol's
    // exporter only (the gRPC one builds on the OTLP/HTTP one's base), in the dynamic provider only; a traces-only endpoint or metrics `none` loads nothing.
    const metricsAsked = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" };
    const loaded = sdkModulesLoaded(providerMain, metricsAsked);
    expect(loaded.some((file) => /@opentelemetry[\\/]sdk-metrics[\\/]/.test(file))).toBe(true);
    expect(loaded.some((file) => /exporter-metrics-otlp-grpc/.test(file))).toBe(true);
    expect(loaded.filter((file) => /sdk-trace|exporter-trace|exporter-metrics-otlp-proto[\\/]/.test(file))).toEqual([]);
    expect(sdkModulesLoaded(other, metricsAsked)).toEqual([]);
    expect(sdkModulesLoaded(providerMain, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:1" })).toEqual([]);
    expect(sdkModulesLoaded(providerMain, { ...metricsAsked, OTEL_METRICS_EXPORTER: "none" })).toEqual([]);
    expect(sdkModulesLoaded(providerMain, { ...metricsAsked, OTEL_SDK_DISABLED: "true" })).toEqual([]);
  });
});
