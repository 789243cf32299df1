// `pulumi-user-groups/otel-preload` (docs/observability.md, "The engine's trace"):
// loaded into a provider process with `node --require` (NODE_OPTIONS) or imported
// first by the plugin's executable. `pulumi --otel-traces ...` starts an OTLP
// receiver and gives every plugin it starts its address in
// PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT; with it, the provider process exports its
// spans there and each gRPC call from the engine runs inside a server span that
// is the child of the engine's client span (telemetry-sdk.ts). Without it this
// module reads one variable and loads nothing else: free when off.
//
// NODE_OPTIONS reaches every node process of an engine run (the language host,
// the program, the dynamic-provider shim's `node -e`): only Pulumi's Node.js
// dynamic-provider host is traced from here; the plugin asks for itself.

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
  // The dynamic-provider host's own grpc-js (the program's @pulumi/pulumi may be another copy than ours).
  const serverModule = provider === "dynamic" && isDynamicProviderProcess() ? process.argv[1] : undefined;
  try {
    const sdk = require("./telemetry-sdk") as typeof import("./telemetry-sdk");
    return sdk.startProviderTracing(endpoint, provider, serverModule);
  } catch (error) {
    // Tracing never stops the provider: it runs untraced, and says why (a module that could not be loaded).
    process.stderr.write(`pulumi-user-groups/otel-preload: tracing is off: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}\n`);
    return false;
  }
}

startProviderTracingIfWanted("dynamic");
