// Issue #41 item 5: an OTLP endpoint that takes nothing (a collector that is down
// or unreachable) no longer holds a short command's exit for the exporters' 10 s
// in silence: the last export waits 2 s (or OTEL_EXPORTER_OTLP_TIMEOUT, when the
// user set one), then a line says the spans were dropped and what to check.
import { createServer, type Server } from "node:http";
import type net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHUTDOWN_WAIT_MS, shutdownWaitMs, startTelemetry } from "../../provider/cli/telemetry-setup";
import { type SilentListener, startSilentListener } from "../support/silent-listener";

let silent: SilentListener;
let silentUrl = "";
let collector: Server;
let collectorUrl = "";
let received = 0;

beforeAll(async () => {
  // Accepts connections and never answers: an endpoint behind a firewall that drops, a hung collector.
  silent = await startSilentListener();
  silentUrl = silent.url;
  collector = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  await silent?.close();
  await new Promise((resolve) => collector?.close(resolve));
});

/** A command's telemetry (traces over OTLP/HTTP to `endpoint`, no metrics) with one span; how long its shutdown took and what it said. */
async function runAgainst(endpoint: string, extra: Record<string, string> = {}): Promise<{ ms: number; said: string | undefined }> {
  // The OTLP exporters read their endpoint and timeout from the process's environment themselves.
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: "otlp", OTEL_METRICS_EXPORTER: "none", ...extra };
  Object.assign(process.env, env);
  try {
    const telemetry = (await startTelemetry(env, { serviceName: "user-groups" }))!;
    await telemetry.inRootSpan("user-groups drift", {}, async () => undefined);
    const started = Date.now();
    const said = await telemetry.shutdown();
    return { ms: Date.now() - started, said };
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
}

describe("the last export of a command's telemetry", () => {
  it("to an endpoint that never answers: given up after 2 s, with a line that names the endpoint and the fix", async () => {
    const { ms, said } = await runAgainst(silentUrl);
    expect(ms).toBeGreaterThanOrEqual(SHUTDOWN_WAIT_MS - 50);
    expect(ms).toBeLessThan(SHUTDOWN_WAIT_MS + 2_000);
    expect(said).toBe(
      `OpenTelemetry: the OTLP endpoint ${silentUrl} did not take the last spans and metrics within 2 s; they were dropped. ` +
        "Check OTEL_EXPORTER_OTLP_ENDPOINT (is the collector up and reachable from here?), or set OTEL_EXPORTER_OTLP_TIMEOUT (ms) to wait longer.",
    );
  });

  it("to a collector that takes them: delivered, nothing said, no wait", async () => {
    const before = received;
    const { ms, said } = await runAgainst(collectorUrl);
    expect(said).toBeUndefined();
    expect(received).toBeGreaterThan(before);
    expect(ms).toBeLessThan(SHUTDOWN_WAIT_MS);
  });

  it("waits as long as OTEL_EXPORTER_OTLP_TIMEOUT when the user set it", () => {
    expect(shutdownWaitMs({})).toBe(2_000);
    expect(shutdownWaitMs({ OTEL_EXPORTER_OTLP_TIMEOUT: "15000" })).toBe(15_000);
    expect(shutdownWaitMs({ OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "500" })).toBe(500);
    expect(shutdownWaitMs({ OTEL_EXPORTER_OTLP_TIMEOUT: "soon" })).toBe(2_000);
  });
});
