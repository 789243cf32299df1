// `pulumi-user-groups/otel-preload` (docs/observability.md, "The engine's trace"):
// loaded into a provider process with `node --require` (NODE_OPTIONS) or imported
// first by the plugin's executable. `pulumi --otel-traces ...` starts an OTLP
// receiver and gives every plugin it starts its address in
// PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT; with it, the provider process exports its
// spans there and each gRPC call from the engine runs inside a server span that
// is the child of the engine's client span (telemetry-sdk.ts). Without it this
// module reads a few variables and loads nothing else: free when off.
//
// Metrics: the provider process inherits the engine's environment, so the standard
// OTEL_* variables of the CLI or service that started the engine reach it; when they
// ask for OTLP metrics (otel-env.ts, otlpMetricsRequested) the HTTP client's
// instruments are exported there too (telemetry-sdk.ts, startProviderMetrics), with
// or without `--otel-traces`. With neither, only the variables are read.
//
// NODE_OPTIONS reaches every node process of an engine run (the language host,
// the program, the dynamic-provider shim's `node -e`): only Pulumi's Node.js
// dynamic-provider host is traced from here; the plugin asks for itself.
//
// Start-up: our engine runs load this preload into every run (not only traced
// ones), and in the dynamic-provider host it defers the closure serializer's
// modules, which a provider process never uses (lean-provider-host.ts).

import { otlpMetricsRequested } from "./otel-env";
import { deferClosureSerializerModules } from "./lean-provider-host";

/** The variable the Pulumi CLI sets for its plugins when run with `--otel-traces`: its OTLP receiver's `host:port`. */
export const OTLP_ENDPOINT_ENV = "PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT";

/** The main module of Pulumi's Node.js dynamic-provider host (`pulumi-resource-pulumi-nodejs` runs it). */
const DYNAMIC_PROVIDER_MAIN = /[\\/]@pulumi[\\/]pulumi[\\/]cmd[\\/]dynamic-provider(?:[\\/]index(?:\.js)?)?$/;

/** Is this process Pulumi's Node.js dynamic-provider host? */
export function isDynamicProviderProcess(argv: readonly string[] = process.argv): boolean {
  const main = argv[1];
  return main !== undefined && DYNAMIC_PROVIDER_MAIN.test(main);
}

/**
 * Starts the provider process's tracing when the engine asked for it (its
 * receiver's address in the environment); `provider` names the process in the
 * trace. Only in the dynamic-provider host unless `always` (the plugin). Returns
 * whether tracing is on.
 */
export function startProviderTracingIfWanted(provider: "dynamic" | "plugin", always = false, env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint = env[OTLP_ENDPOINT_ENV];
  if (!endpoint) return false;
  if (!always && !isDynamicProviderProcess()) return false;
  return started("tracing", () => sdk().startProviderTracing(endpoint, provider, serverModuleOf(provider)));
}

/**
 * Starts the provider process's metrics when the OTEL_* variables it inherited
 * ask for OTLP metrics (otlpMetricsRequested). Only in the dynamic-provider host
 * unless `always` (the plugin). Returns whether metrics are on.
 */
export function startProviderMetricsIfWanted(provider: "dynamic" | "plugin", always = false, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!otlpMetricsRequested(env)) return false;
  if (!always && !isDynamicProviderProcess()) return false;
  return started("metrics", () => sdk().startProviderMetrics(env, provider, serverModuleOf(provider)));
}

/** Both: what the preload and the plugin call first. */
export function startProviderTelemetryIfWanted(provider: "dynamic" | "plugin", always = false, env: NodeJS.ProcessEnv = process.env): { tracing: boolean; metrics: boolean } {
  return { tracing: startProviderTracingIfWanted(provider, always, env), metrics: startProviderMetricsIfWanted(provider, always, env) };
}

function sdk(): typeof import("./telemetry-sdk") {
  return require("./telemetry-sdk") as typeof import("./telemetry-sdk");
}

/** The dynamic-provider host's own grpc-js (the program's @pulumi/pulumi may be another copy than ours). */
function serverModuleOf(provider: "dynamic" | "plugin"): string | undefined {
  return provider === "dynamic" && isDynamicProviderProcess() ? process.argv[1] : undefined;
}

function started(what: string, start: () => boolean): boolean {
  try {
    return start();
  } catch (error) {
    // Telemetry never stops the provider: it runs without, and says why (a module that could not be loaded, a bad protocol).
    process.stderr.write(`pulumi-user-groups/otel-preload: ${what} is off: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}\n`);
    return false;
  }
}

if (isDynamicProviderProcess()) deferClosureSerializerModules();
startProviderTelemetryIfWanted("dynamic");
