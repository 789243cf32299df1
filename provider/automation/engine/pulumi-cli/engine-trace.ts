// Engine runs inside the caller's trace (docs/observability.md, "The engine's
// trace"). `pulumi` parents its root span on the TRACEPARENT of its environment
// and, with `--otel-traces <destination>`, exports its spans and those of the
// plugins it starts (which get its receiver's address) to the destination. The
// dynamic-provider processes join in through the preload
// (`pulumi-user-groups/otel-preload`, NODE_OPTIONS). pulumi-command.ts applies
// these options to every engine run (up, preview, refresh, destroy).
import { context, isSpanContextValid, propagation, trace } from "@opentelemetry/api";
import { UserGroupsError } from "../../../wire/errors";

/** Where the engine of our runs exports its trace: a `--otel-traces` destination (`file://`, `grpc://`, `http(s)://`). */
export const ENGINE_OTEL_TRACES_ENV = "USER_GROUPS_ENGINE_OTEL_TRACES";

/** The Pulumi commands that run the engine (and start providers): the only ones given the options. */
export const ENGINE_COMMANDS: ReadonlySet<string> = new Set(["up", "preview", "refresh", "destroy", "import"]);

export interface EngineTraceOptions {
  /** TRACEPARENT (the active span), NODE_OPTIONS (the preload, when there is a destination). */
  readonly envVars: Readonly<Record<string, string>>;
  /** `--otel-traces <destination>`, when there is one. */
  readonly args: readonly string[];
}

/** The W3C `traceparent` of the active span, when one is recording. */
function activeTraceparent(): string | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return undefined;
  const spanContext = span.spanContext();
  if (!isSpanContextValid(spanContext)) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  // The API's propagator is a no-op until an application registers one: the header is simple enough to write.
  return carrier.traceparent ?? `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

let preloadPath: string | undefined;

/** `--require "<the preload's absolute path>"`, quoted for NODE_OPTIONS (the path may hold spaces). */
export function preloadNodeOption(): string {
  preloadPath ??= require.resolve("pulumi-user-groups/otel-preload");
  return `--require "${preloadPath.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/**
 * The environment and extra arguments of an engine run in the active
 * OpenTelemetry context: TRACEPARENT when a span is recording (the engine's
 * root span becomes its child), and with a destination `--otel-traces
 * <destination>` and NODE_OPTIONS loading the preload into the dynamic-provider
 * processes; with `providerMetrics` (the run's OTEL_* ask for OTLP metrics) the
 * preload too, without `--otel-traces`. Empty when no span is recording, no
 * destination is given and no metrics are asked for.
 */
export function engineTraceOptions(destination?: string, providerMetrics = false): EngineTraceOptions {
  const envVars: Record<string, string> = {};
  const args: string[] = [];
  const traceparent = activeTraceparent();
  if (traceparent !== undefined) envVars.TRACEPARENT = traceparent;
  if (destination) args.push("--otel-traces", destination);
  // The preload also exports the dynamic provider's HTTP metrics when the run's OTEL_* ask for them (providerMetrics).
  if (destination || providerMetrics) envVars.NODE_OPTIONS = preloadNodeOption();
  return { envVars, args };
}

/**
 * A destination Pulumi accepts, holding nothing that may be a credential: it
 * goes on the engine's command line (`--otel-traces`, the only way the Pulumi
 * CLI takes it), which every local user can read in the process list. So a
 * user name or password, a query (`?api_key=...`) or a fragment is refused,
 * naming the variable and never quoting its value. A collector that needs a
 * credential is reached through a local OpenTelemetry collector (or with the
 * application's OTLP exporter, whose headers stay in the environment).
 */
function checkedDestination(value: string, from: string): string {
  const refuse = (why: string) => new UserGroupsError("invalid_trace_destination", `${from} ${why} Its value is not shown here.`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse("is not a URL: give file:///path.json, grpc://host:port or https://host/path.");
  }
  if (!["file:", "grpc:", "http:", "https:"].includes(url.protocol)) {
    throw refuse(`must be a file://, grpc://, http:// or https:// URL (it is ${url.protocol}//...).`);
  }
  if (url.username !== "" || url.password !== "") {
    throw refuse("must not hold a user name or password: it goes on the engine's command line, which every local user can read.");
  }
  // `?` and `#` in any spelling: an empty query or fragment is refused too, as a URL parser may keep it.
  if (value.includes("?") || value.includes("#")) {
    throw refuse(
      "must not hold a query (?...) or a fragment (#...), where a credential such as an API key could be: it goes on the engine's command line, which every local user can read. " +
        "Send the engine's spans to a collector that needs no credential in its URL (a local OpenTelemetry collector that adds it).",
    );
  }
  return value;
}

/**
 * Where the engine exports its trace, from the environment:
 * USER_GROUPS_ENGINE_OTEL_TRACES when set (`off` or empty: nowhere); else, when
 * the application's OTLP exporter is configured for gRPC
 * (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL `grpc`), the
 * same collector: `grpc://host:port` of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT; else nowhere.
 */
export function engineTraceDestination(env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const explicit = env[ENGINE_OTEL_TRACES_ENV];
  if (explicit !== undefined) {
    const value = explicit.trim();
    return value === "" || value === "off" ? undefined : checkedDestination(value, ENGINE_OTEL_TRACES_ENV);
  }
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "").trim();
  if (protocol !== "grpc") return undefined;
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || "").trim();
  if (endpoint === "") return undefined;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined; // the application's exporter reports its own bad endpoint
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return `grpc://${url.hostname}:${port}`; // an IPv6 hostname keeps its brackets
}

/** NODE_OPTIONS of a run: the caller's (the run's or this process's), then ours. */
export function mergedNodeOptions(existing: string | undefined, ours: string | undefined): string | undefined {
  if (ours === undefined) return existing;
  if (existing === undefined || existing.trim() === "") return ours;
  return existing.includes(ours) ? existing : `${existing} ${ours}`;
}
