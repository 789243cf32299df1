// The HTTP client of one API key, as every sender of requests builds it (the
// provider's lifecycle.ts, and a fleet's record-first sign-ups,
// automation/fleet/sign-ups/service-client.ts): the client's tuning, the key's
// shared rate budget (client/rate-budget-stores.ts), and the run's fence (once
// another run holds the stack, nothing more is sent: backends' runFenceFromEnv),
// all from the environment given. Answers the client and its fence (whose owner
// closes it, where it holds a connection).
import type { UserGroupsClient } from "../client/http-client";
import { rateBudgetFromEnv } from "../client/rate-budget";
import { tuningFromEnv } from "../client/tuning";
import { runFenceFromEnv, type RunFence } from "../backends";

/** Where requests go and with which key (logic/credentials.ts resolveCredentials). */
export interface ServiceCredentials {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly allowInsecureHttp: boolean;
}

export interface ServiceClient {
  readonly client: UserGroupsClient;
  /** The run's fence the client sends under, if the environment names one. */
  readonly runFence: RunFence | undefined;
}

/** `Client`: the client's class (the provider loads its module lazily); `log`: where debug lines go, if anywhere. */
export function serviceClientOf(Client: typeof UserGroupsClient, credentials: ServiceCredentials, env: NodeJS.ProcessEnv, log?: (line: string) => void): ServiceClient {
  const { baseUrl, apiKey, allowInsecureHttp } = credentials;
  const tuning = tuningFromEnv(env);
  const runFence = runFenceFromEnv(env);
  const client = new Client({
    baseUrl,
    apiKey,
    allowInsecureHttp,
    retry: tuning.retry,
    timeouts: tuning.timeouts,
    log,
    // The key's budget, shared with every process that uses it (client/rate-budget-stores.ts).
    rateBudget: rateBudgetFromEnv(env, baseUrl, apiKey, log),
    // The run's fence: once another run holds the stack, this client sends nothing more (backends/postgres/run-fence.ts).
    runFence,
  });
  return { client, runFence };
}
