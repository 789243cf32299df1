// A tiny onboarding service: when a customer signs up, it provisions the
// customer's user group through UserGroupFleet and answers with the group's
// token for the app to store.
//
//   POST /customers   Authorization: Bearer $ONBOARDING_TOKEN
//                     {"id": "acme", "name": "Acme Corp", "plan": "team"}
//   -> 201 {"userGroupId": "acme", "token": "...", "teamId": 7, "change": "create"}
//
// The stack is the only record: any number of replicas can share it on one
// backend (e.g. PostgreSQL). Sign-ups arriving together share one engine run,
// a repeated sign-up answers the same token without running anything, and a
// replica that finds the stack busy waits its turn. A replica killed mid-run is
// taken over by the next one by itself (its lock, its half-made groups).
//
// Stopping (SIGTERM, as Kubernetes stops a pod): sign-ups already in flight
// finish and get their answer; new ones get 503 (another replica takes them);
// then the process exits 0.
//
// Tracing (docs/observability.md): each request has a SERVER span (the caller's
// `traceparent` its parent), and the fleet's `ensure` is its child, however long it is
// queued. With OTEL_* set (e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318) the
// process registers an OpenTelemetry SDK from them (pulumi-user-groups/telemetry-setup);
// with none set, nothing of the SDK is loaded.
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { GroupsValidationError, UserGroupExistsError, UserGroupFleet } from "pulumi-user-groups/automation";
import { startTelemetry } from "pulumi-user-groups/telemetry-setup";

const tracer = trace.getTracer("onboarding-service");

export interface OnboardingOptions {
  /** Holds the Pulumi stack's settings (and, without backendUrl, a file backend). */
  workDir: string;
  /** The shared backend of every replica, e.g. postgres://... (default PULUMI_BACKEND_URL). */
  backendUrl?: string;
  stack?: string;
  port?: number;
  /** The bearer secret callers must send: the service hands out customers' tokens. */
  bearerToken: string;
  /** Passed to the engine and provider (credentials: USER_GROUPS_BASE_URL / USER_GROUPS_API_KEY). */
  envVars?: Record<string, string>;
  /** One line per sign-up taken and at stop (default: none). */
  log?: (line: string) => void;
}

export interface OnboardingService {
  url: string;
  /** Drains: sign-ups in flight finish, new ones get 503; resolves once all is closed. */
  close(): Promise<void>;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const MAX_BODY_BYTES = 64 * 1024;

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error("body too large"));
      else chunks.push(chunk);
    });
    req.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        reject(new Error("the body must be JSON"));
      }
    });
    req.on("error", reject);
  });
}

/** Constant-time comparison of the caller's bearer secret. */
function authorized(req: IncomingMessage, expected: Buffer): boolean {
  const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
  if (!match) return false;
  const given = Buffer.from(match[1]!, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function startOnboardingService(options: OnboardingOptions): Promise<OnboardingService> {
  if (options.bearerToken.length < 16) throw new Error("the onboarding bearer token must be at least 16 characters");
  const expected = Buffer.from(options.bearerToken, "utf8");
  const fleet = new UserGroupFleet({
    stack: options.stack ?? "customers",
    workDir: options.workDir,
    ...(options.backendUrl ? { backendUrl: options.backendUrl } : {}),
    ...(options.envVars ? { envVars: options.envVars } : {}),
  });

  const log = options.log ?? (() => undefined);
  let stopping = false;
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const server: Server = createServer((req, res) => {
    // The request's span: a child of the caller's trace context, the parent of the fleet's ensure.
    const span = tracer.startSpan(`${req.method ?? "GET"} /customers`, { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "GET", "http.route": "/customers" } }, propagation.extract(context.active(), req.headers));
    const active = trace.setSpan(context.active(), span);
    const reply = (status: number, body: unknown) => {
      span.setAttribute("http.response.status_code", status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...(stopping ? { connection: "close" } : {}) });
      res.end(JSON.stringify(body));
    };
    if (stopping) return reply(503, { error: "this replica is stopping: send the sign-up again (another replica takes it)" });
    if (req.method !== "POST" || req.url !== "/customers") return reply(404, { error: "POST /customers only" });
    if (!authorized(req, expected)) return reply(401, { error: "send Authorization: Bearer <ONBOARDING_TOKEN>" });
    inFlight += 1;
    readBody(req)
      .then(async (body) => {
        const { id, name, plan } = (body ?? {}) as { id?: unknown; name?: unknown; plan?: unknown };
        if (typeof id !== "string" || !ID.test(id) || typeof name !== "string" || name.trim() === "") {
          return reply(400, { error: "id (letters, digits, . _ -) and name are required" });
        }
        log(`sign-up ${id}: provisioning`);
        const group = await context.with(active, () => fleet.ensure({ name, userGroupId: id, properties: { plan: typeof plan === "string" ? plan : "trial" } }));
        return reply(group.change === "create" ? 201 : 200, {
          userGroupId: group.userGroupId,
          token: group.token,
          teamId: group.teamId,
          change: group.change,
        });
      })
      .catch((error: unknown) => {
        if (error instanceof GroupsValidationError) return reply(400, { error: error.message });
        if (error instanceof UserGroupExistsError) return reply(409, { error: error.message });
        return reply(502, { error: error instanceof Error ? error.message.split("\n")[0] : String(error) });
      })
      .finally(() => {
        inFlight -= 1;
        if (inFlight === 0) drained?.();
      });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      (closing ??= (async () => {
        // Still listening while it drains: a new sign-up gets a 503 (retried elsewhere) rather than a refused connection.
        stopping = true;
        log(`stopping: ${inFlight} sign-ups in flight finish, new ones get 503`);
        if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
        await fleet.close();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await stopped;
        log("stopped");
      })()),
  };
}

if (typeof require !== "undefined" && require.main === module) {
  const bearerToken = process.env.ONBOARDING_TOKEN;
  if (!bearerToken) {
    process.stderr.write("Set ONBOARDING_TOKEN: the bearer secret callers of POST /customers must send.\n");
    process.exit(2);
  }
  const telemetry = startTelemetry(process.env, { serviceName: "onboarding-service" });
  telemetry.then(() => startOnboardingService({
    workDir: path.resolve(process.env.ONBOARDING_WORK_DIR ?? ".onboarding"),
    bearerToken,
    port: Number(process.env.PORT ?? 3000),
    ...(process.env.ONBOARDING_STACK ? { stack: process.env.ONBOARDING_STACK } : {}),
    log: (line) => process.stdout.write(`${line}\n`),
  })).then((service) => {
    process.stdout.write(`onboarding service listening on ${service.url}\n`);
    // Kubernetes sends SIGTERM, then SIGKILL after the grace period: in-flight sign-ups finish first, then the spans left are sent.
    const stop = async () => {
      await service.close();
      await (await telemetry)?.shutdown();
      process.exit(0);
    };
    for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => void stop());
  });
}
