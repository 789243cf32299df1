// One implementation of a UserGroup's provider methods (check, diff, create,
// read, update, delete), shared by both ways Pulumi runs it: the dynamic
// provider (resource/runtime.ts) and the provider plugin (plugin/provider.ts).
// Each of them is a thin shell that adapts Pulumi's calling convention to this.
import { type Span, SpanStatusCode } from "@opentelemetry/api";
import { saveCompileCache } from "../compile-cache";
import type { UserGroupsClient } from "../client/http-client";
import { type ConfigLookup, MissingCredentialsError, recordedConfigHint, resolveCredentials } from "./credentials";
import { diffUserGroup, type DiffOutcome } from "./diff";
import { type EngineOperation, engineFacingError } from "./engine-facing";
import { type CheckedInputs, type CheckResult, checkInputs, type UserGroupOutputs } from "./inputs";
import { createUserGroup, deleteUserGroup, readUserGroup, type ReadOutcome, updateUserGroup } from "./operations";
import { serviceClientOf } from "./service-client";
import { type ReservedValueProblem, ReservedValueError, reservedValueProblems } from "./reserved-values";
import { allowedAttributes, errorType, packageTracer } from "../telemetry";
import { PACKAGE_VERSION } from "../version";

export const DEBUG_ENV = "USER_GROUPS_DEBUG";

export interface ProviderEnvironment {
  readonly env: NodeJS.ProcessEnv;
  /** Where debug lines go when USER_GROUPS_DEBUG is set. */
  readonly debugSink: (line: string) => void;
}

export const PROCESS_ENVIRONMENT: ProviderEnvironment = { env: process.env, debugSink: (line) => process.stderr.write(`${line}\n`) };

type HttpClientModule = typeof import("../client/http-client");
let httpClientModule: HttpClientModule | undefined;

/**
 * The HTTP client module (and with it undici), loaded on the first request
 * rather than when the provider process loads: check and diff, all that a
 * preview calls, never need it.
 */
function httpClient(): HttpClientModule {
  if (httpClientModule === undefined) {
    httpClientModule = require("../client/http-client") as HttpClientModule;
    saveCompileCache();
  }
  return httpClientModule;
}

/** The operations that have a span (`UserGroup create`, ...). */
export type TracedOperation = "create" | "read" | "update" | "delete" | "diff";

const tracer = packageTracer(PACKAGE_VERSION);

/** A group's id as recorded: only a string (the inputs are not checked yet when a call is malformed). */
function groupIdOf(props: Record<string, unknown>): string | undefined {
  return typeof props.userGroupId === "string" ? props.userGroupId : undefined;
}

/** Records a failure on an operation's span: its code only, never its message (it may quote a body). */
function recordFailure(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  span.setAttributes(allowedAttributes({ "error.type": errorType(typeof code === "string" || typeof code === "number" ? code : undefined), "user_groups.outcome": "error" }));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * Runs one operation inside its span (`UserGroup <operation>`, the child of the
 * span active now: in a provider process traced for the engine, the gRPC call's
 * server span), so the HTTP client's spans are its children. With no SDK
 * registered the span is the API's no-op.
 */
function traced<T>(operation: TracedOperation, userGroupId: string | undefined, run: () => T, outcome?: (result: Awaited<T>) => string): T {
  return tracer.startActiveSpan(`UserGroup ${operation}`, { attributes: allowedAttributes({ "user_groups.operation": operation, "user_groups.user_group_id": userGroupId }) }, (span) => {
    let result: T;
    try {
      result = run();
    } catch (error) {
      recordFailure(span, error);
      span.end();
      throw error;
    }
    if (!(result instanceof Promise)) {
      if (span.isRecording()) span.setAttributes(allowedAttributes({ "user_groups.outcome": outcome?.(result as Awaited<T>) ?? "ok" }));
      span.end();
      return result;
    }
    return result.then(
      (value: Awaited<T>) => {
        if (span.isRecording()) span.setAttributes(allowedAttributes({ "user_groups.outcome": outcome?.(value) ?? "ok" }));
        span.end();
        return value;
      },
      (error: unknown) => {
        recordFailure(span, error);
        span.end();
        throw error;
      },
    ) as T;
  });
}

/**
 * Where the engine may send Pulumi's unknown-value marker as "not known yet",
 * and where it never does. It passes unknowns to a provider only in a preview
 * (`AllowUnknowns` of check and diff is the run's dry-run flag; create and
 * update of a provider without preview support, which both of ours are, are
 * not called in a preview), and only as the string marker a Node.js program
 * writes; in an update it drops every unknown before calling. So a marker in a
 * create's or an update's inputs, in the state a diff or an update compares
 * with, or any marker but the string one in a diff's new inputs, was a value
 * (an output's resolved value the program's guard missed, a planted state):
 * refused, naming the field, before any request.
 */
function refuseReservedValues(
  operation: "diff" | "create" | "update",
  parts: ReadonlyArray<{ props: Record<string, unknown>; unknownValues: "pass" | "refuse"; of?: string }>,
): void {
  const problems: ReservedValueProblem[] = [];
  for (const { props, unknownValues, of } of parts) {
    for (const problem of reservedValueProblems(props, { unknownValues })) problems.push(of === undefined ? problem : { path: problem.path, message: `${of}: ${problem.message}` });
  }
  if (problems.length > 0) throw new ReservedValueError(operation, groupIdOf(parts.at(-1)!.props), problems);
}

export class UserGroupLifecycle {
  private config: ConfigLookup = () => undefined;
  /** One keep-alive client per (base URL, API key) for the life of the process. */
  private readonly clients = new Map<string, UserGroupsClient>();

  constructor(private readonly surroundings: ProviderEnvironment = PROCESS_ENVIRONMENT) {}

  /** Where provider config (`user-groups:*`) is read from; credentials are resolved per call, never kept in state. */
  configure(config: ConfigLookup): void {
    this.config = config;
  }

  check(news: Record<string, unknown>): CheckResult {
    return checkInputs(news);
  }

  /** `olds` are the old outputs, `news` the checked new inputs. */
  diff(olds: Record<string, unknown>, news: Record<string, unknown>): DiffOutcome {
    return traced(
      "diff",
      groupIdOf(news) ?? groupIdOf(olds),
      () => {
        refuseReservedValues("diff", [
          { props: olds, unknownValues: "refuse", of: "the state" },
          { props: news, unknownValues: "pass" },
        ]);
        return diffUserGroup(olds as Partial<CheckedInputs>, news as unknown as CheckedInputs);
      },
      (outcome) => (outcome.replaces.length > 0 ? "replace" : outcome.changes ? "update" : "same"),
    );
  }

  create(inputs: Record<string, unknown>): Promise<UserGroupOutputs> {
    const checked = inputs as unknown as CheckedInputs;
    return this.worded("create", checked.profile, undefined, () =>
      traced("create", groupIdOf(inputs), async () => {
        refuseReservedValues("create", [{ props: inputs, unknownValues: "refuse" }]);
        return createUserGroup(this.clientFor(checked.profile), checked);
      }),
    );
  }

  read(olds: Record<string, unknown>): Promise<ReadOutcome> {
    const held = olds as unknown as UserGroupOutputs;
    return this.worded("read", held.profile, "refresh", () =>
      traced(
        "read",
        groupIdOf(olds),
        () => readUserGroup(this.clientFor(held.profile, "refresh"), held),
        (outcome) => (outcome.found ? "found" : "gone"),
      ),
    );
  }

  update(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<UserGroupOutputs> {
    const checked = news as unknown as CheckedInputs;
    return this.worded("update", checked.profile, undefined, () =>
      traced("update", groupIdOf(news), async () => {
        refuseReservedValues("update", [
          { props: olds, unknownValues: "refuse", of: "the state" },
          { props: news, unknownValues: "refuse" },
        ]);
        return updateUserGroup(this.clientFor(checked.profile), olds as unknown as UserGroupOutputs, checked);
      }),
    );
  }

  delete(olds: Record<string, unknown>): Promise<void> {
    const held = olds as unknown as UserGroupOutputs;
    return this.worded("delete", held.profile, "destroy", () => traced("delete", groupIdOf(olds), () => deleteUserGroup(this.clientFor(held.profile, "destroy"), held)));
  }

  /** Runs an operation; its failure leaves worded for the engine (engine-facing.ts): one line, the operation, the cause, the fix. */
  private async worded<T>(operation: EngineOperation, profile: string | undefined, stateOnly: "refresh" | "destroy" | undefined, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw engineFacingError(operation, error, { profile, env: this.surroundings.env, ...(stateOnly !== undefined ? { stateOnly } : {}) });
    }
  }

  /** `stateOnly`: an operation Pulumi runs with the provider config the state recorded (a refresh or a destroy without the program). */
  private clientFor(profile: string | undefined, stateOnly?: "refresh" | "destroy"): UserGroupsClient {
    const { baseUrl, apiKey, allowInsecureHttp } = (() => {
      try {
        return resolveCredentials(profile, this.config, this.surroundings.env, stateOnly);
      } catch (error) {
        if (stateOnly === undefined || !(error instanceof MissingCredentialsError)) throw error;
        throw new MissingCredentialsError(`${error.message}${recordedConfigHint(stateOnly, this.surroundings.env)}`);
      }
    })();
    const cacheKey = `${baseUrl}\u0000${apiKey}\u0000${allowInsecureHttp}`;
    let client = this.clients.get(cacheKey);
    if (!client) {
      const debug = this.surroundings.env[DEBUG_ENV];
      const log = debug && debug !== "0" && debug !== "false" ? this.surroundings.debugSink : undefined;
      client = serviceClientOf(httpClient().UserGroupsClient, { baseUrl, apiKey, allowInsecureHttp }, this.surroundings.env, log).client;
      this.clients.set(cacheKey, client);
    }
    return client;
  }
}
