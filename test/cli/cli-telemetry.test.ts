// `user-groups` with the standard OTEL_* variables (docs/observability.md, "Turning it
// on"): the built CLI exports its spans and metrics over OTLP/HTTP (JSON) to a
// receiver started here on 127.0.0.1; the command's span is the root (TRACEPARENT of
// its environment its parent, as a GitOps job's), the operation and its engine run
// nest under it, and no secret of the run appears in anything exported. Without
// OTEL_*, nothing is exported and the SDK is not loaded.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli, USER_GROUPS_CLI } from "../support/user-groups-cli";

const KEY = "cli-telemetry-key-canary-5be1d0";
const PASSPHRASE = "cli-telemetry-passphrase-canary-91ac";
const PROPERTY_CANARY = "cli-telemetry-property-canary-77e2";
const { server, env, envVars } = useStackFixture({ label: "cli-telemetry", apiKeys: [KEY] });

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/** An OTLP/HTTP receiver (JSON): every body posted, by path. */
const received: Array<{ path: string; body: string; contentType: string }> = [];
let receiver: Server;
let endpoint: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8"), contentType: req.headers["content-type"] ?? "" });
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (name.startsWith("OTEL_") || name === "TRACEPARENT") delete base[name];
  return { ...base, ...envVars({ GITHUB_STEP_SUMMARY: "", PULUMI_CONFIG_PASSPHRASE: PASSPHRASE }), ...extra };
}

function cli(extra: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, { cwd: env.workDir, env: cliEnv(extra) });
}

/** Runs the CLI's main in a process that then says which OpenTelemetry packages (other than the API) it loaded. */
const PROBE = `
const { main } = require(process.argv[1]);
main(process.argv.slice(2), { stdout: () => {}, stderr: (s) => process.stderr.write(s), isTty: false, progressIsTty: false, env: process.env, confirm: async () => false }).then((code) => {
  const loaded = Object.keys(require.cache).filter((k) => /node_modules[\\/]@opentelemetry[\\/](?!api[\\/])/.test(k));
  process.stdout.write(JSON.stringify({ code, loaded }));
});`;

function loadedBy(extra: Record<string, string>, ...args: string[]): Promise<{ code: number; loaded: string[] }> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ["-e", PROBE, USER_GROUPS_CLI, ...args], { cwd: env.workDir, env: cliEnv(extra) }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as { code: number; loaded: string[] }),
    ),
  );
}

function spansOf(bodies: readonly string[]): OtlpSpan[] {
  return bodies.flatMap((body) => {
    const parsed = JSON.parse(body) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };
    return (parsed.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []));
  });
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : (value.stringValue ?? value.intValue ?? value.doubleValue);
};

describe("user-groups with OTEL_*", () => {
  beforeAll(async () => {
    const file = path.join(env.workDir, "groups.yaml");
    writeFileSync(file, `groups:\n  - { name: "Traced", userGroupId: traced, properties: { note: "${PROPERTY_CANARY}" } }\n`);
    const up = await cli({}, "up", "--file", file, "--yes");
    expect(up.code, up.stderr).toBe(0);
  }, 120_000);

  it("exports nothing, and loads no SDK module, when no OTEL_* variable asks (or they say none, or OTEL_SDK_DISABLED)", async () => {
    const before = received.length;
    expect(await loadedBy({}, "drift")).toEqual({ code: 0, loaded: [] });
    const drift = await cli({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" }, "drift");
    expect(drift.code, drift.stderr).toBe(0);
    expect(await loadedBy({ OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, "drift")).toEqual({ code: 0, loaded: [] });
    expect(received.length).toBe(before);
  }, 120_000);

  it("drift: the command's span is the root (the job's TRACEPARENT its parent), the drift and its engine run nest under it; metrics sent; no secret", async () => {
    const traceId = randomBytes(16).toString("hex");
    const jobSpan = randomBytes(8).toString("hex");
    const before = received.length;
    const drift = await cli(
      {
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_METRICS_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_SERVICE_NAME: "gitops-drift",
        TRACEPARENT: `00-${traceId}-${jobSpan}-01`,
      },
      "drift",
    );
    expect(drift.code, drift.stderr).toBe(0);
    // Flushed before the CLI exited: everything is here already.
    const posted = received.slice(before);
    const spans = spansOf(posted.filter((p) => p.path === "/v1/traces").map((p) => p.body));
    const named = (name: string) => spans.filter((s) => s.name === name);
    const [root] = named("user-groups drift");
    expect(root, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(root!.traceId).toBe(traceId);
    expect(root!.parentSpanId).toBe(jobSpan);
    expect(attribute(root!, "user_groups.cli.command")).toBe("drift");
    expect(attribute(root!, "user_groups.outcome")).toBe("ok");
    const [operation] = named("user_groups.drift");
    expect(operation!.parentSpanId).toBe(root!.spanId);
    expect(String(attribute(operation!, "user_groups.group_count"))).toBe("1");
    const [preview] = named("user_groups.engine.preview");
    expect(preview!.parentSpanId).toBe(operation!.spanId);
    expect(attribute(preview!, "user_groups.stack")).toBe("default");
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
    const resource = posted.find((p) => p.path === "/v1/traces")!.body;
    expect(resource).toContain("gitops-drift");
    // The metrics' last collection went out at shutdown.
    const metrics = posted.filter((p) => p.path === "/v1/metrics").map((p) => p.body).join("\n");
    expect(metrics).toContain("user_groups.engine.runs");
    expect(metrics).toContain("user_groups.engine.run.duration");
    // No secret anywhere: the key, the passphrase, a property value, the group's token.
    const everything = posted.map((p) => p.body).join("\n");
    const token = server.groups().find((g) => g.user_group_id === "traced")!.token;
    for (const canary of [KEY, PASSPHRASE, PROPERTY_CANARY, token]) expect(everything).not.toContain(canary);
  }, 120_000);

  it("with only an endpoint set: OTLP over HTTP/protobuf (OpenTelemetry's defaults), no secret in the bytes", async () => {
    const before = received.length;
    const drift = await cli({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: "none" }, "drift");
    expect(drift.code, drift.stderr).toBe(0);
    const traces = received.slice(before).filter((p) => p.path === "/v1/traces");
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0]!.contentType).toBe("application/x-protobuf");
    const bytes = traces.map((p) => p.body).join("\n");
    expect(bytes).toContain("user-groups drift");
    expect(bytes).toContain("user_groups.engine.preview");
    for (const canary of [KEY, PASSPHRASE, PROPERTY_CANARY]) expect(bytes).not.toContain(canary);
  }, 120_000);

  it("up: the operation, its shard planning, lease wait and engine run under the command's span", async () => {
    const file = path.join(env.workDir, "groups-2.yaml");
    writeFileSync(file, `groups:\n  - { name: "Traced", userGroupId: traced, properties: { note: "${PROPERTY_CANARY}" } }\n  - { name: "Second", userGroupId: second }\n`);
    const before = received.length;
    const up = await cli(
      { OTEL_TRACES_EXPORTER: "otlp", OTEL_METRICS_EXPORTER: "none", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` },
      "up",
      "--file",
      file,
      "--yes",
    );
    expect(up.code, up.stderr).toBe(0);
    const spans = spansOf(received.slice(before).filter((p) => p.path === "/v1/traces").map((p) => p.body));
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const [root] = spans.filter((s) => s.name === "user-groups up");
    expect(root!.parentSpanId ?? "").toBe(""); // no TRACEPARENT: the command's span is the root
    const [operation] = spans.filter((s) => s.name === "user_groups.provision.up");
    expect(operation!.parentSpanId).toBe(root!.spanId);
    for (const name of ["user_groups.shards.plan", "user_groups.lease.wait", "user_groups.engine.up"]) {
      const span = spans.find((s) => s.name === name && s.parentSpanId === operation!.spanId);
      expect(span, `${name} under the operation: ${JSON.stringify(spans.map((s) => [s.name, byId.get(s.parentSpanId ?? "")?.name]))}`).toBeDefined();
    }
    expect(received.slice(before).some((p) => p.path === "/v1/metrics")).toBe(false); // OTEL_METRICS_EXPORTER=none
  }, 120_000);
});
