// What OpenTelemetry's standard OTEL_* environment variables ask for, read the same
// way by the CLI's SDK setup (cli/telemetry-setup.ts) and by the provider processes
// an engine run starts (telemetry-preload.ts, telemetry-sdk.ts), which inherit the
// engine's environment. Parsing only: no OpenTelemetry package is loaded here.

export type OtelEnv = Readonly<Record<string, string | undefined>>;

const ENDPOINTS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] as const;

/** A comma-separated list, lower-cased; undefined when unset or empty. */
export function otelListOf(value: string | undefined): string[] | undefined {
  const items = value
    ?.split(",")
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== "");
  return items === undefined || items.length === 0 ? undefined : items;
}

function disabled(env: OtelEnv): boolean {
  return env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true";
}

function given(env: OtelEnv, name: string): boolean {
  return (env[name]?.trim() ?? "") !== "";
}

/**
 * True when the environment asks for telemetry: OTEL_SDK_DISABLED is not `true`,
 * and an exporter other than `none` is named (OTEL_TRACES_EXPORTER,
 * OTEL_METRICS_EXPORTER) or an OTLP endpoint is given (unless both exporters are `none`).
 */
export function telemetryRequested(env: OtelEnv): boolean {
  if (disabled(env)) return false;
  const traces = otelListOf(env.OTEL_TRACES_EXPORTER);
  const metrics = otelListOf(env.OTEL_METRICS_EXPORTER);
  const names = (list: string[] | undefined) => list !== undefined && list.some((item) => item !== "none");
  if (names(traces) || names(metrics)) return true;
  if (traces !== undefined && metrics !== undefined) return false; // both `none`
  return ENDPOINTS.some((name) => given(env, name));
}

/**
 * True when the environment asks for metrics over OTLP: OTEL_SDK_DISABLED is not
 * `true`, OTEL_METRICS_EXPORTER (if set) names `otlp`, and it is named or an
 * endpoint for metrics is given (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT). A traces-only endpoint does not ask for metrics.
 */
export function otlpMetricsRequested(env: OtelEnv): boolean {
  if (disabled(env)) return false;
  const exporters = otelListOf(env.OTEL_METRICS_EXPORTER);
  if (exporters !== undefined) return exporters.includes("otlp");
  return given(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") || given(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
}

/** The exporters a signal's variable names; when unset, `otlp` (OpenTelemetry's default). */
export function otelExportersOf(value: string | undefined): string[] {
  return (otelListOf(value) ?? ["otlp"]).filter((item) => item !== "none");
}

export type OtlpProtocol = "grpc" | "http/protobuf" | "http/json";

/** The OTLP protocol of a signal: its own variable, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (OpenTelemetry's default). Throws on another value. */
export function otlpProtocolOf(env: OtelEnv, signal: "TRACES" | "METRICS"): OtlpProtocol {
  const value = (env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf").trim().toLowerCase();
  if (value === "grpc" || value === "http/json" || value === "http/protobuf") return value;
  throw new Error(`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: "${value.slice(0, 40)}" is not one of grpc, http/protobuf, http/json`);
}

/** OTEL_METRIC_EXPORT_INTERVAL in milliseconds (default 60000). */
export function metricExportIntervalMs(env: OtelEnv): number {
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL ?? "60000");
  return Number.isFinite(interval) && interval > 0 ? interval : 60_000;
}
