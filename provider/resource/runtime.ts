// The dynamic provider that actually runs, inside Pulumi's dynamic-provider
// process. It is loaded there by name (see provider-shell.ts), never serialized,
// so refresh and destroy always run the installed package's code. Each method
// is a thin shell over the plain functions in ../logic.
import { saveCompileCache } from "../compile-cache"; // first: it covers the modules loaded after it
import type * as pulumi from "@pulumi/pulumi";
import type { UserGroupsClient } from "../client/http-client";
import { rateBudgetFromEnv } from "../client/rate-budget-stores";
import { tuningFromEnv } from "../client/tuning";
import { type ConfigLookup, resolveCredentials } from "../logic/credentials";
import { diffUserGroup } from "../logic/diff";
import { type CheckedInputs, checkInputs, type UserGroupOutputs } from "../logic/inputs";
import { createUserGroup, deleteUserGroup, readUserGroup, updateUserGroup } from "../logic/operations";
import { watchEngineOfThisProcess } from "./engine-watchdog";

export const DEBUG_ENV = "USER_GROUPS_DEBUG";

export interface ProviderEnvironment {
  readonly env: NodeJS.ProcessEnv;
  /** Where debug lines go when USER_GROUPS_DEBUG is set. */
  readonly debugSink: (line: string) => void;
}

type Props = Record<string, unknown>;

type HttpClientModule = typeof import("../client/http-client");
let httpClientModule: HttpClientModule | undefined;

/**
 * The HTTP client module (and with it undici), loaded on the first request
 * rather than when the dynamic-provider process loads this runtime: check and
 * diff, all that a preview calls, never need it.
 */
function httpClient(): HttpClientModule {
  if (httpClientModule === undefined) {
    httpClientModule = require("../client/http-client") as HttpClientModule;
    saveCompileCache();
  }
  return httpClientModule;
}

export class UserGroupProvider implements pulumi.dynamic.ResourceProvider {
  private config: ConfigLookup = () => undefined;
  /** One keep-alive client per (base URL, API key) for the life of the process. */
  private readonly clients = new Map<string, UserGroupsClient>();

  constructor(private readonly surroundings: ProviderEnvironment = { env: process.env, debugSink: (line) => process.stderr.write(`${line}\n`) }) {}

  async configure(req: pulumi.dynamic.ConfigureRequest): Promise<void> {
    this.config = (key) => req.config.get(key);
  }

  async check(_olds: Props, news: Props): Promise<pulumi.dynamic.CheckResult> {
    const result = checkInputs(news);
    return result.ok ? { inputs: result.inputs } : { inputs: news, failures: result.failures };
  }

  async diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
    const outcome = diffUserGroup(olds as Partial<CheckedInputs>, news as unknown as CheckedInputs);
    return { changes: outcome.changes, replaces: outcome.replaces, deleteBeforeReplace: outcome.deleteBeforeReplace };
  }

  async create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
    const checked = inputs as unknown as CheckedInputs;
    const outs = await createUserGroup(this.clientFor(checked.profile), checked);
    return { id: outs.userGroupId, outs };
  }

  async read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
    const olds = props as unknown as UserGroupOutputs;
    const outcome = await readUserGroup(this.clientFor(olds.profile), olds);
    // A blank id tells the engine the group is gone.
    if (!outcome.found) return { id: "", props: {} };
    return { id, props: outcome.outputs, inputs: outcome.inputs };
  }

  async update(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
    const checked = news as unknown as CheckedInputs;
    const outs = await updateUserGroup(this.clientFor(checked.profile), olds as unknown as UserGroupOutputs, checked);
    return { outs };
  }

  async delete(_id: string, props: Props): Promise<void> {
    const olds = props as unknown as UserGroupOutputs;
    await deleteUserGroup(this.clientFor(olds.profile), olds);
  }

  private clientFor(profile: string | undefined): UserGroupsClient {
    const { baseUrl, apiKey, allowInsecureHttp } = resolveCredentials(profile, this.config, this.surroundings.env);
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
        // The key's budget, shared with every process that uses it (rate-budget-stores.ts).
        rateBudget: rateBudgetFromEnv(this.surroundings.env, baseUrl, apiKey, log),
      });
      this.clients.set(cacheKey, client);
    }
    return client;
  }
}

/** The one instance the dynamic-provider process uses for every UserGroup. */
export const userGroupProvider = new UserGroupProvider();
// A provider whose engine was killed exits within seconds instead of working on alone.
watchEngineOfThisProcess();
saveCompileCache();
