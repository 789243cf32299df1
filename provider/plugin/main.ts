#!/usr/bin/env node
// `pulumi-resource-user-groups`: the provider plugin's executable. The engine
// starts it (from a plugin installed with `pulumi plugin install`, or found on
// PATH) and talks to it over gRPC; it prints its port and serves until told to stop.
import "./require-node"; // first: an older node would fail obscurely further on
import { startProviderTelemetryIfWanted } from "../telemetry-preload";
import { saveCompileCache } from "../compile-cache"; // covers the modules loaded after it
import { main } from "@pulumi/pulumi/provider";
import { quietHostEcho } from "../logic/engine-facing";
import { hookProviderServer } from "./server-hooks";
import { UserGroupPluginProvider } from "./provider";

// Under `pulumi --otel-traces`: spans to the engine's receiver, each call in a span under the engine's; with OTEL_* asking
// for metrics, the HTTP client's metrics to that endpoint (before the server starts).
startProviderTelemetryIfWanted("plugin", true);
const provider = new UserGroupPluginProvider();
// The provider server echoes a failed read or delete with its stack trace: the engine prints our one line instead.
quietHostEcho();
hookProviderServer((config) => provider.configure(config));
saveCompileCache();
main(provider, process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`pulumi-resource-user-groups: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
