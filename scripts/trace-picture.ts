// Makes the trace pictures of docs/observability.md from real runs (npm run
// docs:traces): a real OpenTelemetry Collector (scripts/ensure-otelcol) receives
// what the processes export over OTLP/gRPC, configured only by the standard OTEL_*
// variables, against the fake server, on a file backend in .work/:
//
//   sign-up  the onboarding-service example (examples/onboarding-service) answering one
//            POST /customers, its first PUT answered 503 once (the provider retries);
//            the service's spans, its engine run's (`--otel-traces grpc://` to the same
//            collector) and the dynamic provider's, in one trace;
//   up       `user-groups up` of three groups under a GitOps job's TRACEPARENT, the
//            default rate budget (180 requests a minute) pacing their requests.
//
// Each trace is drawn as a waterfall (testkit/trace-svg.ts: names and times only)
// into docs/trace-<name>.svg, and printed as a text tree.
//
//   node build/scripts/trace-picture.js [--only sign-up|up] [--out DIR]
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type FakeServer, startFakeServer } from "../fake-server";
import { freePort } from "../testkit/free-port";
import { ancestors, type CollectedSpan, type OtelCollector, renderSpanTree, startOtelCollector } from "../testkit/otel-collector";
import { renderWaterfallSvg } from "../testkit/trace-svg";

const REPO_ROOT = path.resolve(__dirname, "../..");
type Scenario = "sign-up" | "up";

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

/** The engine's own storage and plumbing spans: left out of the pictures (their children move up). */
const NOISE = [
  /^gocloud\.dev\//,
  /^diyBackend\./,
  /^stack\./,
  /^time-to-first-print$/,
  /^pulumirpc\.ResourceMonitor\//,
  /^pulumirpc\.LanguageRuntime\/(About|GetRequiredPackages|GetRequiredPlugins|Run)$/,
  /^pulumirpc\.ResourceProvider\/(Handshake|GetPluginInfo|CheckConfig|Configure|Cancel|GetSchema|Attach)$/,
];
const keep = (span: CollectedSpan) => !NOISE.some((re) => re.test(span.name));

/** An engine's span name as drawn: the provider calls shortened (the engine's CLIENT side and the provider's SERVER side). */
function label(span: CollectedSpan): string {
  const rpc = /^pulumirpc\.ResourceProvider\/(\w+)$/.exec(span.name);
  if (rpc) return `${rpc[1]} (${span.kind === "SERVER" ? "provider answers" : "engine calls provider"})`;
  if (span.kind === "CLIENT" && /^[A-Z]+$/.test(span.name)) return `HTTP ${span.name}`;
  return span.name;
}

const num = (span: CollectedSpan, name: string): number | undefined => {
  const value = span.attributes[name];
  return typeof value === "number" ? value : undefined;
};

/** Numbers only, from attributes that hold times, counts and statuses: what the wait and the retries were. */
function note(span: CollectedSpan): string | undefined {
  const parts: string[] = [];
  const status = num(span, "http.response.status_code");
  if (status !== undefined && span.kind === "CLIENT") parts.push(String(status));
  const resend = num(span, "http.request.resend_count");
  if (resend !== undefined) parts.push(`retry ${resend}`);
  const budget = num(span, "user_groups.rate_budget.wait_ms");
  if (budget !== undefined && budget >= 1) parts.push(`waited ${budget.toFixed(0)} ms for the rate budget`);
  const retryAfter = num(span, "user_groups.retry_after_ms");
  if (retryAfter !== undefined && retryAfter >= 1) parts.push(`${retryAfter.toFixed(0)} ms for Retry-After`);
  const queued = num(span, "user_groups.queued_ms");
  if (queued !== undefined) parts.push(`queued ${queued.toFixed(0)} ms`);
  const batch = num(span, "user_groups.batch.size");
  if (batch !== undefined && span.name === "user_groups.fleet.batch") parts.push(`${batch} call${batch === 1 ? "" : "s"}`);
  return parts.length > 0 ? `(${parts.join(", ")})` : undefined;
}

/** The time an HTTP attempt waited before it was sent: its rate-budget slot and any Retry-After. */
const waitedBeforeMs = (span: CollectedSpan): number | undefined => {
  const total = (num(span, "user_groups.rate_budget.wait_ms") ?? 0) + (num(span, "user_groups.retry_after_ms") ?? 0);
  return total > 0 ? total : undefined;
};

function pulumiBinDir(): string {
  const stdout = execFileSync(path.join(REPO_ROOT, "scripts", "ensure-pulumi"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return stdout.trim().split("\n").at(-1) ?? "";
}

interface Setup {
  readonly collector: OtelCollector;
  readonly server: FakeServer;
  readonly dir: string;
  /** The run's environment: Pulumi (file backend), the fake server, OTEL_* to the collector. */
  env(serviceName: string, extra?: Record<string, string>): NodeJS.ProcessEnv;
}

/** Waits for the trace `traceId` until the chain from a span named `leaf` reaches `root` (a span id); answers its spans. */
async function collected(collector: OtelCollector, traceId: string, leaf: (s: CollectedSpan) => boolean, rootSpanId: string): Promise<CollectedSpan[]> {
  const mine = (all: CollectedSpan[]) => all.filter((s) => s.traceId === traceId);
  const spans = await collector.waitForSpans((all) => {
    const trace = mine(all);
    return trace.filter(leaf).some((s) => ancestors(trace, s).at(-1)?.parentSpanId === rootSpanId);
  }, 60_000);
  // A moment for the last exports (the engine's, the service's at its stop) to be written.
  await new Promise((r) => setTimeout(r, 1500));
  return mine(collector.spans());
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(args[0] ?? command)} ${args.slice(1).join(" ")} exited ${code}:\n${output}`))));
  });
}

async function signUp(setup: Setup): Promise<{ spans: CollectedSpan[]; rootSpanId: string }> {
  const token = randomBytes(16).toString("hex");
  const port = await freePort();
  const workDir = path.join(setup.dir, "onboarding");
  mkdirSync(workDir);
  // What the example's own main does (service.ts, run as CommonJS like test/support/onboarding-replica.cjs):
  // the SDK from OTEL_*, the service, and on SIGTERM a drain and the last spans sent.
  const main = `
    const { startOnboardingService } = require(${JSON.stringify(path.join(REPO_ROOT, "examples/onboarding-service/service.ts"))});
    const { startTelemetry } = require("pulumi-user-groups/telemetry-setup");
    startTelemetry(process.env, { serviceName: "onboarding-service" }).then(async (telemetry) => {
      const service = await startOnboardingService({ workDir: process.env.ONBOARDING_WORK_DIR, bearerToken: process.env.ONBOARDING_TOKEN, port: Number(process.env.PORT) });
      process.stdout.write("listening on " + service.url + "\\n");
      process.once("SIGTERM", async () => { await service.close(); await telemetry?.shutdown(); process.exit(0); });
    });`;
  const service = spawn(process.execPath, ["-e", main], {
    cwd: workDir,
    env: setup.env("onboarding-service", { ONBOARDING_TOKEN: token, ONBOARDING_WORK_DIR: workDir, PORT: String(port) }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => service.on("close", (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the onboarding service did not start:\n${output}`)), 60_000);
      const seen = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      service.stdout!.on("data", seen);
      service.stderr!.on("data", (c: Buffer) => (output += c.toString()));
      service.once("close", () => reject(new Error(`the onboarding service exited:\n${output}`)));
    });
    // The caller's trace (a front end's span), so the request's SERVER span has a known parent.
    const traceId = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    setup.server.setFaults([{ method: "PUT", action: "status", status: 503, times: 1 }]);
    const response = await fetch(`http://127.0.0.1:${port}/customers`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ id: "acme", name: "Acme Corp", plan: "team" }),
    });
    if (response.status !== 201) throw new Error(`POST /customers answered ${response.status}: ${await response.text()}`);
    await response.body?.cancel();
    setup.server.setFaults([]);
    service.kill("SIGTERM"); // it drains, then sends the spans it has left
    await exited;
    const spans = await collected(setup.collector, traceId, (s) => s.kind === "CLIENT" && s.service === "pulumi-user-groups-dynamic-provider", callerSpan);
    return { spans, rootSpanId: callerSpan };
  } finally {
    if (service.exitCode === null) service.kill("SIGKILL");
  }
}

async function up(setup: Setup): Promise<{ spans: CollectedSpan[]; rootSpanId: string }> {
  const workDir = path.join(setup.dir, "gitops");
  mkdirSync(workDir);
  const file = path.join(workDir, "groups.yaml");
  writeFileSync(
    file,
    "groups:\n" +
      '  - { name: "Umbrella", userGroupId: umbrella }\n' +
      '  - { name: "Globex", userGroupId: globex }\n' +
      '  - { name: "Initech", userGroupId: initech }\n',
  );
  const traceId = randomBytes(16).toString("hex");
  const jobSpan = randomBytes(8).toString("hex");
  await run(process.execPath, [path.join(REPO_ROOT, "dist/provider/cli/user-groups.js"), "up", "--file", file, "--yes"], setup.env("gitops-job", { TRACEPARENT: `00-${traceId}-${jobSpan}-01`, USER_GROUPS_RATE_LIMIT: "180/60" }), workDir);
  const spans = await collected(setup.collector, traceId, (s) => s.kind === "CLIENT" && s.service === "pulumi-user-groups-dynamic-provider", jobSpan);
  return { spans, rootSpanId: jobSpan };
}

const TITLES: Record<Scenario, { title: string; subtitle: string }> = {
  "sign-up": {
    title: "A fleet sign-up: POST /customers of the onboarding service",
    subtitle: "service span > ensure > batch > lease, engine run > pulumi > provider > HTTP (a 503 retried); file backend, fake server",
  },
  up: {
    title: "user-groups up of three groups, in a GitOps job's trace",
    subtitle: "command > operation > engine run > pulumi > provider > HTTP, paced by the key's rate budget (180/min); file backend, fake server",
  },
};

async function main(): Promise<void> {
  const only = argument("--only") as Scenario | undefined;
  if (only !== undefined && only !== "sign-up" && only !== "up") throw new Error("--only takes sign-up or up");
  const outDir = path.resolve(argument("--out") ?? path.join(REPO_ROOT, "docs"));
  const binDir = pulumiBinDir();
  const base = path.join(REPO_ROOT, ".work");
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(path.join(base, "trace-picture-"));
  const apiKey = randomBytes(16).toString("hex");
  const passphrase = randomBytes(16).toString("hex");
  mkdirSync(path.join(dir, "state"));
  const [collector, server] = await Promise.all([startOtelCollector(), startFakeServer({ apiKeys: [{ key: apiKey, environment: "Customer" }] })]);
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(inherited)) if (name.startsWith("OTEL_") || name.startsWith("USER_GROUPS_") || name.startsWith("PULUMI_") || name === "TRACEPARENT") delete inherited[name];
  const setup: Setup = {
    collector,
    server,
    dir,
    env: (serviceName, extra = {}) => ({
      ...inherited,
      PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ""}`,
      PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`,
      PULUMI_HOME: path.join(dir, "pulumi-home"),
      PULUMI_CONFIG_PASSPHRASE: passphrase,
      PULUMI_SKIP_UPDATE_CHECK: "true",
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: apiKey,
      USER_GROUPS_ALLOW_INSECURE_HTTP: "1",
      GITHUB_STEP_SUMMARY: "",
      OTEL_SERVICE_NAME: serviceName,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint,
      ...extra,
    }),
  };
  try {
    for (const scenario of ["sign-up", "up"] as const) {
      if (only !== undefined && only !== scenario) continue;
      const { spans } = scenario === "sign-up" ? await signUp(setup) : await up(setup);
      process.stdout.write(`\n${scenario}: ${spans.length} spans\n${renderSpanTree(spans)}\n`);
      const svg = renderWaterfallSvg(spans, { ...TITLES[scenario], keep, label, note, waitedBeforeMs });
      // Nothing secret may reach a committed picture.
      for (const secret of [apiKey, passphrase, ...server.groups().map((g) => g.token)]) if (svg.includes(secret)) throw new Error(`a secret is in the ${scenario} picture`);
      const file = path.join(outDir, `trace-${scenario}.svg`);
      writeFileSync(file, svg);
      process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
    }
  } finally {
    await server.close();
    await collector.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`trace-picture: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
