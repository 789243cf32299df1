// The package's OpenTelemetry foundation (issue #35, docs/observability.md): its
// tracer and meter, through @opentelemetry/api only. Off by default and free when
// off: with no SDK registered by the application, the API hands out no-op spans and
// instruments, and nothing here exports anything. Attributes come only from an
// allow-list (TelemetryAttributes): a token, API key, passphrase, password or
// property value has no name to be recorded under. Imports nothing of ours.
import { type Attributes, createNoopMeter, type Meter, type MeterProvider, metrics, trace, type Tracer } from "@opentelemetry/api";

/** The instrumentation scope of every span and instrument of the package. */
export const INSTRUMENTATION_SCOPE = "pulumi-user-groups";

/**
 * Every attribute the package may record, with its type. Strings are identifiers,
 * codes and paths, never a value from a group's properties nor any secret.
 */
export interface TelemetryAttributes {
  readonly "http.request.method"?: string;
  readonly "server.address"?: string;
  readonly "server.port"?: number;
  readonly "url.path"?: string;
  readonly "http.response.status_code"?: number;
  readonly "error.type"?: string;
  readonly "http.request.resend_count"?: number;
  readonly "user_groups.user_group_id"?: string;
  readonly "user_groups.rate_budget.wait_ms"?: number;
  readonly "user_groups.retry_after_ms"?: number;
  // Engine trace (issue #35 item 1): a provider process's gRPC server span and the UserGroup operation spans.
  readonly "rpc.system"?: string;
  readonly "rpc.service"?: string;
  readonly "rpc.method"?: string;
  readonly "rpc.grpc.status_code"?: number;
  readonly "user_groups.operation"?: string;
  readonly "user_groups.outcome"?: string;
  // Fleet, provisioning, lease, engine-run and CLI spans (docs/observability.md, "What is traced").
  // Identifiers, counts, codes and times only: a stack or shard name, never a config value.
  readonly "user_groups.stack"?: string;
  readonly "user_groups.shard"?: number;
  readonly "user_groups.shard_count"?: number;
  readonly "user_groups.group_count"?: number;
  readonly "user_groups.batch.size"?: number;
  readonly "user_groups.queued_ms"?: number;
  readonly "user_groups.lease.wait_ms"?: number;
  readonly "user_groups.lease.refusals"?: number;
  readonly "user_groups.lease.holder"?: string;
  readonly "user_groups.lease.holder_epoch"?: number;
  readonly "user_groups.lease.epoch"?: number;
  readonly "user_groups.takeover.old_epoch"?: number;
  readonly "user_groups.takeover.dead_runs"?: number;
  readonly "user_groups.takeover.removed_locks"?: number;
  readonly "user_groups.takeover.pending_count"?: number;
  readonly "user_groups.takeover.adopted_count"?: number;
  readonly "user_groups.takeover.not_adopted_count"?: number;
  readonly "user_groups.takeover.killed_processes"?: number;
  readonly "user_groups.drift.drifted_count"?: number;
  readonly "user_groups.cli.command"?: string;
}

type AttributeName = keyof TelemetryAttributes;

const ALLOWED: Readonly<Record<AttributeName, "string" | "number">> = {
  "http.request.method": "string",
  "server.address": "string",
  "server.port": "number",
  "url.path": "string",
  "http.response.status_code": "number",
  "error.type": "string",
  "http.request.resend_count": "number",
  "user_groups.user_group_id": "string",
  "user_groups.rate_budget.wait_ms": "number",
  "user_groups.retry_after_ms": "number",
  // Engine trace (issue #35 item 1).
  "rpc.system": "string",
  "rpc.service": "string",
  "rpc.method": "string",
  "rpc.grpc.status_code": "number",
  "user_groups.operation": "string",
  "user_groups.outcome": "string",
  // Fleet, provisioning, lease, engine-run and CLI spans.
  "user_groups.stack": "string",
  "user_groups.shard": "number",
  "user_groups.shard_count": "number",
  "user_groups.group_count": "number",
  "user_groups.batch.size": "number",
  "user_groups.queued_ms": "number",
  "user_groups.lease.wait_ms": "number",
  "user_groups.lease.refusals": "number",
  "user_groups.lease.holder": "string",
  "user_groups.lease.holder_epoch": "number",
  "user_groups.lease.epoch": "number",
  "user_groups.takeover.old_epoch": "number",
  "user_groups.takeover.dead_runs": "number",
  "user_groups.takeover.removed_locks": "number",
  "user_groups.takeover.pending_count": "number",
  "user_groups.takeover.adopted_count": "number",
  "user_groups.takeover.not_adopted_count": "number",
  "user_groups.takeover.killed_processes": "number",
  "user_groups.drift.drifted_count": "number",
  "user_groups.cli.command": "string",
};

/** The names an attribute may have; any other is dropped by allowedAttributes. */
export const ALLOWED_ATTRIBUTES: ReadonlySet<string> = new Set(Object.keys(ALLOWED));

/** The longest string attribute kept (longer ones are cut). */
export const MAX_ATTRIBUTE_CHARS = 256;

/**
 * Attributes from the allow-list only, checked when run too (a caller outside the
 * type system cannot slip another name in): each name must be allowed and its value
 * of the allowed type (a finite number, or a string, cut at MAX_ATTRIBUTE_CHARS);
 * anything else is dropped.
 */
export function allowedAttributes(values: TelemetryAttributes): Attributes {
  const out: Attributes = {};
  for (const name of Object.keys(values)) {
    const type = Object.hasOwn(ALLOWED, name) ? ALLOWED[name as AttributeName] : undefined;
    const value: unknown = values[name as AttributeName];
    if (type === "number" && typeof value === "number" && Number.isFinite(value)) out[name] = value;
    else if (type === "string" && typeof value === "string") out[name] = value.length > MAX_ATTRIBUTE_CHARS ? value.slice(0, MAX_ATTRIBUTE_CHARS) : value;
  }
  return out;
}

/** A code safe to record as `error.type`: letters, digits, `_ . -` (at most 64), else `_OTHER` (OpenTelemetry's fallback). */
export function errorType(code: string | number | undefined): string {
  const text = String(code ?? "");
  return /^[A-Za-z0-9_.-]{1,64}$/.test(text) ? text : "_OTHER";
}

/**
 * The package's tracer. The API's proxy: spans are no-ops until the application
 * registers a tracer provider, and real from then on.
 */
export function packageTracer(version: string): Tracer {
  return trace.getTracer(INSTRUMENTATION_SCOPE, version);
}

/** The package's meter from the meter provider registered now (the API's no-op meter when none is). */
export function packageMeter(version: string): Meter {
  return metrics.getMeter(INSTRUMENTATION_SCOPE, version);
}

/** The class of the API's no-op meter (what the meter provider gives when none is registered). */
const NoopMeter = createNoopMeter().constructor;

/**
 * Instruments made once per registered meter provider, or undefined while none is
 * (the API's no-op meter: the caller skips even building the measurement's
 * attributes). The metrics API has no proxy: a meter taken before the application
 * registers its SDK stays a no-op, so the instruments are made on first use and
 * again whenever the global provider changes (one global read per use).
 */
export function lazyInstruments<T>(version: string, create: (meter: Meter) => T): () => T | undefined {
  let provider: MeterProvider | undefined;
  let made: T | undefined;
  return () => {
    const current = metrics.getMeterProvider();
    if (current !== provider) {
      provider = current;
      const meter = current.getMeter(INSTRUMENTATION_SCOPE, version);
      made = meter instanceof NoopMeter ? undefined : create(meter);
    }
    return made;
  };
}
