// One implementation of a UserGroup's provider methods (check, diff, create,
// read, update, delete), shared by both ways Pulumi runs it: the dynamic
// provider (resource/runtime.ts) and the provider plugin (plugin/provider.ts).
// Each of them is a thin shell that adapts Pulumi's calling convention to this.
import { saveCompileCache } from "../compile-cache";
import type { UserGroupsClient } from "../client/http-client";
import { rateBudgetFromEnv } from "../client/rate-budget";
import { runFenceFromEnv } from "../client/run-fence";
import { tuningFromEnv } from "../client/tuning";
import { type ConfigLookup, MissingCredentialsError, recordedConfigHint, resolveCredentials } from "./credentials";
import { diffUserGroup, type DiffOutcome } from "./diff";
import { type CheckedInputs, type CheckResult, checkInputs, type UserGroupOutputs } from "./inputs";
import { createUserGroup, deleteUserGroup, readUserGroup, type ReadOutcome, updateUserGroup } from "./operations";

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
    return diffUserGroup(olds as Partial<CheckedInputs>, news as unknown as CheckedInputs);
  }

  create(inputs: Record<string, unknown>): Promise<UserGroupOutputs> {
    const checked = inputs as unknown as CheckedInputs;
    return createUserGroup(this.clientFor(checked.profile), checked);
  }

  read(olds: Record<string, unknown>): Promise<ReadOutcome> {
    const held = olds as unknown as UserGroupOutputs;
    return readUserGroup(this.clientFor(held.profile, "refresh"), held);
  }

  update(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<UserGroupOutputs> {
    const checked = news as unknown as CheckedInputs;
    return updateUserGroup(this.clientFor(checked.profile), olds as unknown as UserGroupOutputs, checked);
  }

  delete(olds: Record<string, unknown>): Promise<void> {
    const held = olds as unknown as UserGroupOutputs;
    return deleteUserGroup(this.clientFor(held.profile, "destroy"), held);
  }

  /** `stateOnly`: an operation Pulumi runs with the provider config the state recorded (a refresh or a destroy without the program). */
  private clientFor(profile: string | undefined, stateOnly?: "refresh" | "destroy"): UserGroupsClient {
    const { baseUrl, apiKey, allowInsecureHttp } = (() => {
      try {
        return resolveCredentials(profile, this.config, this.surroundings.env);
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
      const tuning = tuningFromEnv(this.surroundings.env);
      const { UserGroupsClient } = httpClient();
      client = new UserGroupsClient({
        baseUrl,
        apiKey,
        allowInsecureHttp,
        retry: tuning.retry,
        timeouts: tuning.timeouts,
        log,
        // The key's budget, shared with every process that uses it (client/rate-budget-stores.ts).
        rateBudget: rateBudgetFromEnv(this.surroundings.env, baseUrl, apiKey, log),
        // The run's fence: once another run holds the stack, this process sends nothing more (client/run-fence).
        runFence: runFenceFromEnv(this.surroundings.env),
      });
      this.clients.set(cacheKey, client);
    }
    return client;
  }
}
