// The HTTP client of /api/user: keep-alive connections (undici), JSON bodies on
// every method (fetch forbids a body on GET, the API requires one), responses
// validated with the shared wire schemas, retries per retry-policy.ts.
import type { IncomingHttpHeaders } from "node:http";
import { Agent } from "undici";
import type { z } from "zod";
import { type Clock, clockOf } from "../clock";
import { USER_AGENT } from "../version";
import {
  API_PATH,
  type ApiMethod,
  type DeleteUserRequest,
  deleteUserResponseSchema,
  type Environment,
  errorResponseSchema,
  type GetUserRequest,
  type GetUserResponse,
  getUserResponseSchema,
  type RotateTokenResponse,
  rotateTokenResponseSchema,
  type UpdateUserRequest,
  type UpdateUserResponse,
  updateUserResponseSchema,
} from "../wire/schemas";
import { formatIssues, WORDED_ISSUES } from "../wire/issues";
import { UserGroupApiError } from "./errors";
import { Pacer } from "./pacer";
import type { RateBudget } from "./rate-budget";
import type { RunFence } from "../backends";
import { headerValue, isSuccess, networkCode, parseJson, tokenOf, wasSent, withAmbiguity } from "./http-answers";
import { HttpTelemetry } from "./http-telemetry";
import { Redactor } from "./redact";
import { assertSecureTransport } from "./transport";
import { type AttemptOutcome, DEFAULT_RETRY_POLICY, nextRetryDelayMs, parseRetryAfterMs, type RetryPolicy } from "./retry-policy";
import { UserGroupsError } from "../wire/errors";

export interface Timeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  readonly bodyMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };

export interface ClientOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Plain http to a host that is not loopback (the key travels unencrypted). Off unless the user opts in. */
  readonly allowInsecureHttp?: boolean;
  readonly retry?: Partial<RetryPolicy>;
  readonly timeouts?: Partial<Timeouts>;
  /** Connections kept open per origin. */
  readonly connections?: number;
  /** Debug lines (already redacted). Off unless given. */
  readonly log?: (line: string) => void;
  /** What time it is, how to wait, where the retries' jitter comes from (default: the system's); for tests. */
  readonly clock?: Clock;
  /** @deprecated Give `clock` instead (this replaces its `sleep`). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @deprecated Give `clock` instead (this replaces its `now`). */
  readonly now?: () => number;
  /** @deprecated Give `clock` instead (this replaces its `random`). */
  readonly random?: () => number;
  /** Shared pacing after 429s (default: one per client). */
  readonly pacer?: Pacer;
  /**
   * The key's rate budget: every request (each retry included) takes a slot of it
   * before it is sent (rate-budget.ts). None: requests are paced only after 429s.
   * The provider always gives one (USER_GROUPS_RATE_LIMIT, default 180/60).
   */
  readonly rateBudget?: RateBudget;
  /**
   * The run's fence (run-fence/): asked before every attempt, right before it is
   * sent; a run whose lease is no longer current sends nothing (`run_fenced`).
   */
  readonly runFence?: RunFence;
}

export interface GetOrCreateResult {
  readonly response: GetUserResponse;
  readonly earlierAttemptMayHaveApplied: boolean;
}

interface SendOptions {
  readonly userGroupId?: string;
  /** False for requests that must not be repeated blindly when their answer was lost (rotation). */
  readonly retryWhenAmbiguous: boolean;
}

/** One logical request across its attempts. */
interface RequestInProgress {
  readonly method: ApiMethod;
  readonly payload: string;
  readonly options: SendOptions;
  readonly started: number;
  /** Time spent waiting for a pacing slot: not the request's fault, so not held against its retry budget. */
  pacedMs: number;
  /** An earlier attempt got no usable answer and may have been carried out. */
  ambiguousEarlier: boolean;
  /** For the next attempt's span: the wait for its rate-budget slot, and for a Retry-After before it. */
  budgetWaitMs?: number;
  retryAfterWaitMs?: number;
}

interface FailedAttempt {
  readonly done: false;
  readonly outcome: AttemptOutcome;
  readonly failure: UserGroupApiError;
  /** The service may have carried this attempt out (a 5xx, or a request sent whose answer was lost). */
  readonly mayHaveApplied: boolean;
}

type AttemptResult<T> = { readonly done: true; readonly data: T } | FailedAttempt;

export class UserGroupsClient {
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly pathPrefix: string;
  private readonly apiKey: string;
  private readonly agent: Agent;
  private readonly policy: RetryPolicy;
  private readonly timeouts: Timeouts;
  private readonly redactor = new Redactor();
  private readonly log?: (line: string) => void;
  /** Time, sleeping and jitter for retries, pacing and rotation's rounds (provider/clock.ts). */
  readonly clock: Clock;
  private readonly pacer: Pacer;
  private readonly rateBudget?: RateBudget;
  private readonly runFence?: RunFence;
  private readonly telemetry: HttpTelemetry;
  /** A key belongs to exactly one environment (W1); learned from the first answer that says it. */
  private knownEnvironment?: Environment;
  /** W1: a read-only key gets 403 on every PUT; learned from the first such answer (R5 reads then use GET). */
  private knownReadOnly = false;

  constructor(options: ClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UserGroupsError("invalid_base_url", `The user-groups base URL must be http(s), got "${url.protocol}"`);
    }
    assertSecureTransport(url, options.allowInsecureHttp === true);
    this.origin = url.origin;
    this.pathPrefix = url.pathname.replace(/\/+$/, "");
    this.baseUrl = `${this.origin}${this.pathPrefix}`;
    this.apiKey = options.apiKey;
    this.redactor.add(options.apiKey);
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.agent = new Agent({
      connections: options.connections ?? 16,
      connect: { timeout: this.timeouts.connectMs },
      keepAliveTimeout: 10_000,
    });
    this.log = options.log;
    this.clock = clockOf(options);
    this.pacer = options.pacer ?? new Pacer(this.clock);
    this.rateBudget = options.rateBudget;
    this.runFence = options.runFence;
    this.telemetry = new HttpTelemetry(this.origin, this.redactor.text(`${this.pathPrefix}${API_PATH}`));
  }

  /** Attempts at one request, the first included (USER_GROUPS_MAX_ATTEMPTS). */
  get maxAttempts(): number {
    return this.policy.maxAttempts;
  }

  /** True once a PUT was refused as forbidden: the key is read-only (W1). */
  get keyIsReadOnly(): boolean {
    return this.knownReadOnly;
  }

  /** The environment of this client's key, once an answer has told it. */
  get environment(): Environment | undefined {
    return this.knownEnvironment;
  }

  /**
   * GET: the stored group if the id exists (nothing changes), else a new one.
   * `earlierAttemptMayHaveApplied` says an attempt before the answered one got
   * no answer, so a group reported as existing may be one that attempt created.
   */
  async getOrCreate(request: GetUserRequest): Promise<GetOrCreateResult> {
    const { data, ambiguousEarlier } = await this.sendTracked("GET", request, getUserResponseSchema, {
      userGroupId: request.user_group_id,
      retryWhenAmbiguous: true,
    });
    return { response: data, earlierAttemptMayHaveApplied: ambiguousEarlier };
  }

  /** PUT: replaces the fields present. With only user_group_id it changes nothing and reads the group back. */
  async update(request: UpdateUserRequest): Promise<UpdateUserResponse> {
    const response = await this.send("PUT", request, updateUserResponseSchema, {
      userGroupId: request.user_group_id,
      retryWhenAmbiguous: true,
    }).catch((error: unknown) => {
      if (error instanceof UserGroupApiError && error.isForbidden) this.knownReadOnly = true;
      throw error;
    });
    this.knownEnvironment = response.user_group.api_environment_tag;
    return response;
  }

  /**
   * POST: issues a new token for the group holding `currentToken`. Not retried
   * once a request may have reached the service: the caller reconciles by
   * reading the token back (see logic/operations.ts).
   */
  async rotateToken(currentToken: string, userGroupId?: string): Promise<RotateTokenResponse> {
    const response = await this.send("POST", { current_token: currentToken }, rotateTokenResponseSchema, {
      userGroupId,
      retryWhenAmbiguous: false,
    });
    this.knownEnvironment = response.user_group.api_environment_tag;
    this.redactor.add(response.user_group.token);
    return response;
  }

  /**
   * DELETE by current token. Repeating it is harmless: when an attempt's answer
   * was lost and the retry finds the token unknown, that lost attempt deleted
   * the group, so the delete is done (found by the fault matrix: callers that
   * clean up an accidental creation would otherwise fail on their own success).
   */
  async delete(request: DeleteUserRequest): Promise<void> {
    try {
      await this.send("DELETE", request, deleteUserResponseSchema, {
        userGroupId: request.user_group_id ?? request.data_source_provided_id,
        retryWhenAmbiguous: true,
      });
    } catch (error) {
      if (error instanceof UserGroupApiError && error.isNotFound && error.ambiguous) return;
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async send<S extends z.ZodType>(method: ApiMethod, body: object, schema: S, options: SendOptions): Promise<z.infer<S>> {
    return (await this.sendTracked(method, body, schema, options)).data;
  }

  /**
   * One request with its retries: wait for a pacing slot, then attempt, and after
   * each failure either stop (final answer, a request that must not be repeated,
   * or no retry budget left) or wait and try again.
   */
  private async sendTracked<S extends z.ZodType>(
    method: ApiMethod,
    body: object,
    schema: S,
    options: SendOptions,
  ): Promise<{ data: z.infer<S>; ambiguousEarlier: boolean }> {
    const request: RequestInProgress = { method, payload: this.serialize(body), options, started: this.clock.now(), pacedMs: 0, ambiguousEarlier: false };
    await this.waitForFirstSlot(request);
    for (let attempt = 1; ; attempt++) {
      const result = await this.attempt(request, schema, attempt);
      if (result.done) return { data: result.data, ambiguousEarlier: request.ambiguousEarlier };
      this.noteMayHaveApplied(request, result);
      const delay = nextRetryDelayMs(this.policy, result.outcome, attempt, this.clock.now() - request.started - request.pacedMs, () => this.clock.random());
      // A final answer after a lost one: the caller may need to know an earlier attempt may have applied.
      if (delay === undefined) throw request.ambiguousEarlier && !result.failure.ambiguous ? withAmbiguity(result.failure) : result.failure;
      await this.waitBeforeRetry(request, delay, result.outcome.kind === "response" && result.outcome.retryAfterMs !== undefined);
    }
  }

  /** The body as sent; a current_token in it is a secret from now on. */
  private serialize(body: object): string {
    if ("current_token" in body && typeof body.current_token === "string") this.redactor.add(body.current_token);
    return JSON.stringify(body);
  }

  private async waitForFirstSlot(request: RequestInProgress): Promise<void> {
    const firstWait = this.pacer.reserve();
    if (firstWait > 0) {
      request.pacedMs += firstWait;
      await this.clock.sleep(firstWait);
    }
    await this.takeBudgetSlot(request);
  }

  /**
   * The key's shared budget, after the 429 pacer and any backoff: the slot is
   * taken when the request could go, so no process holds a slot it cannot use.
   * The wait is pacing, not the request's fault: not held against its retry budget
   * (and the attempt's own timeouts start only when it is sent).
   */
  private async takeBudgetSlot(request: RequestInProgress): Promise<void> {
    if (this.rateBudget === undefined) return;
    const before = this.clock.now();
    await this.rateBudget.acquire();
    const waited = Math.max(0, this.clock.now() - before);
    request.pacedMs += waited;
    request.budgetWaitMs = waited;
    this.telemetry.recordBudgetWait(waited);
  }

  /**
   * One attempt, its answer or network failure classified. Throws a failure that
   * no retry can change (a 200 that is not a success, an answer that does not
   * match the schema).
   */
  private async attempt<S extends z.ZodType>(request: RequestInProgress, schema: S, attempt: number): Promise<AttemptResult<z.infer<S>>> {
    // A fenced run sends nothing: the error is final for this run (its caller asks again, and the new holder serves it).
    await this.runFence?.check();
    const attemptStarted = this.clock.now();
    const span = this.telemetry.startAttempt({
      method: request.method,
      attempt,
      userGroupId: request.options.userGroupId,
      rateBudgetWaitMs: request.budgetWaitMs,
      retryAfterWaitMs: request.retryAfterWaitMs,
    });
    let status: number | undefined;
    let failure: UserGroupApiError | undefined;
    try {
      const response = await this.agent.request({
        origin: this.origin,
        path: `${this.pathPrefix}${API_PATH}`,
        method: request.method,
        headers: span.inject({
          authorization: `Token ${this.apiKey}`,
          "content-type": "application/json",
          accept: "application/json",
          "user-agent": USER_AGENT,
        }),
        body: request.payload,
        // undici closes the connection after a GET or DELETE that carries a body
        // (in case the server ignores it) unless told not to. This API reads the
        // body of every method, so keep the connection: otherwise every create,
        // read and delete paid a new TCP connection (docs/performance.md, fix 1).
        reset: false,
        headersTimeout: this.timeouts.headersMs,
        bodyTimeout: this.timeouts.bodyMs,
      });
      status = response.statusCode;
      const text = await response.body.text();
      const result = this.classifyAnswer(request, schema, attempt, attemptStarted, response.statusCode, response.headers, text);
      if (!result.done) failure = result.failure;
      return result;
    } catch (error) {
      if (error instanceof UserGroupApiError) throw (failure = error);
      const result = this.classifyNetworkFailure(request, attempt, attemptStarted, error);
      if (!result.done) failure = result.failure;
      return result;
    } finally {
      span.end(status, failure);
    }
  }

  private classifyAnswer<S extends z.ZodType>(
    request: RequestInProgress,
    schema: S,
    attempt: number,
    attemptStarted: number,
    status: number,
    headers: IncomingHttpHeaders,
    text: string,
  ): AttemptResult<z.infer<S>> {
    const { method, options } = request;
    this.observePacing(status, headers);
    this.debug(`${method} ${API_PATH} -> ${status} (${this.clock.now() - attemptStarted} ms, attempt ${attempt})`);
    const parsed = parseJson(text);
    if (status === 200 && isSuccess(parsed)) return { done: true, data: this.validated(method, schema, options, attempt, status, parsed) };
    const error = errorResponseSchema.safeParse(parsed);
    const retryAfterMs = parseRetryAfterMs(headerValue(headers["retry-after"]), this.clock.now());
    const failure = error.success
      ? this.failure(method, options, attempt, {
          kind: "http",
          status,
          code: error.data.error.code,
          serverMessage: error.data.error.message,
        })
      : status === 200
        ? this.failure(method, options, attempt, {
            kind: "invalid_response",
            status,
            serverMessage: "the answer says success is not 1 but carries no error",
          })
        : this.failure(method, options, attempt, {
            kind: "http",
            status,
            serverMessage: text.length > 0 ? text.slice(0, 200) : undefined,
          });
    if (status === 200) throw failure; // a well-formed "success: 0" on 200 is final
    // A gateway may fail after the service carried the request out.
    return { done: false, outcome: { kind: "response", status, retryAfterMs }, failure, mayHaveApplied: status >= 500 };
  }

  /** A 429 slows every later request of this pacer; any other answer lets it speed up again. */
  private observePacing(status: number, headers: IncomingHttpHeaders): void {
    if (status === 429) {
      const retryAfterMs = parseRetryAfterMs(headerValue(headers["retry-after"]), this.clock.now());
      this.pacer.observe(status, retryAfterMs);
      // Every sharer of the key's budget holds off too (not awaited: the store is told, this request goes on retrying).
      if (retryAfterMs !== undefined) void this.rateBudget?.holdOff(retryAfterMs).catch(() => undefined);
      this.debug(`rate limited; pacing requests ${Math.round(this.pacer.state.intervalMs)} ms apart`);
    } else {
      this.pacer.observe(status, undefined);
    }
  }

  /** A success body checked against the method's response schema; its token is a secret from now on. */
  private validated<S extends z.ZodType>(method: ApiMethod, schema: S, options: SendOptions, attempt: number, status: number, parsed: unknown): z.infer<S> {
    const result = schema.safeParse(parsed, WORDED_ISSUES);
    if (result.success) {
      const token = tokenOf(result.data);
      if (token) this.redactor.add(token);
      return result.data as z.infer<S>;
    }
    throw this.failure(method, options, attempt, {
      kind: "invalid_response",
      status,
      serverMessage: `the answer does not match the ${method} response schema (${formatIssues(result.error, "the body").join("; ")})`,
    });
  }

  private classifyNetworkFailure(request: RequestInProgress, attempt: number, attemptStarted: number, error: unknown): AttemptResult<never> {
    const { method, options } = request;
    const sent = wasSent(error);
    this.debug(`${method} ${API_PATH} -> ${networkCode(error)} (${this.clock.now() - attemptStarted} ms, attempt ${attempt})`);
    const failure = this.failure(method, options, attempt, {
      kind: "network",
      code: networkCode(error),
      serverMessage: error instanceof Error ? error.message : String(error),
      ambiguous: sent,
      cause: error,
    });
    return { done: false, outcome: { kind: "network", sent }, failure, mayHaveApplied: sent };
  }

  /**
   * An attempt that may have been carried out: a request that must not be repeated
   * blindly (rotation) stops here, ambiguous; others go on, remembering it.
   */
  private noteMayHaveApplied(request: RequestInProgress, result: FailedAttempt): void {
    if (!result.mayHaveApplied) return;
    if (!request.options.retryWhenAmbiguous) throw result.failure.ambiguous ? result.failure : withAmbiguity(result.failure);
    request.ambiguousEarlier = true;
  }

  /** The retry delay, or longer when the pacer has no slot sooner, then a budget slot; pacing time is not held against the retry budget. */
  private async waitBeforeRetry(request: RequestInProgress, delay: number, afterRetryAfter: boolean): Promise<void> {
    const wait = this.pacer.reserve(this.clock.now() + delay);
    request.pacedMs += wait - delay;
    request.retryAfterWaitMs = afterRetryAfter ? wait : undefined;
    request.budgetWaitMs = undefined;
    this.debug(`retrying ${request.method} in ${wait} ms`);
    await this.clock.sleep(wait);
    await this.takeBudgetSlot(request);
  }

  private failure(
    method: ApiMethod,
    options: SendOptions,
    attempts: number,
    details: { kind: UserGroupApiError["kind"]; status?: number; code?: string; serverMessage?: string; ambiguous?: boolean; cause?: unknown },
  ): UserGroupApiError {
    const { cause, ...rest } = details;
    return new UserGroupApiError(
      {
        method,
        baseUrl: this.baseUrl,
        userGroupId: options.userGroupId,
        environment: this.knownEnvironment,
        attempts,
        kind: rest.kind,
        status: rest.status,
        code: rest.code,
        serverMessage: rest.serverMessage !== undefined ? this.redactor.text(rest.serverMessage) : undefined,
        ambiguous: rest.ambiguous ?? false,
      },
      cause !== undefined ? { cause } : undefined,
    );
  }

  private debug(line: string): void {
    if (this.log) this.log(this.redactor.text(`[user-groups] ${line}`));
  }
}
