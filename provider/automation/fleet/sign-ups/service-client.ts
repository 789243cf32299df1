// The fleet's own HTTP client for a record-first sign-up (sign-ups.ts): the
// provider's client, built by the provider's own helper (logic/service-client.ts,
// which lifecycle.ts's clientFor uses too): credentials from the fleet's config, envVars and the process
// environment (resolveCredentials), the client's tuning, the key's shared rate
// budget, and the run's fence (PostgreSQL: nothing is sent once a newer epoch
// holds the lease). One per lease and profile: the fence is the lease's.
import { UserGroupsClient } from "../../../client/http-client";
import { type RunFence } from "../../../backends";
import { serviceClientOf } from "../../../logic/service-client";
import { resolveCredentials } from "../../../logic/credentials";
import { runConfigLookup } from "../../engine";
import type { RunOptions } from "../../model";

/** The clients of one lease: one per profile, closed with the lease. */
export class LeaseClients {
  private readonly clients = new Map<string, UserGroupsClient>();
  private readonly fences: RunFence[] = [];

  /** `fenceEnv`: the lease's fence (its store's fenceEnv), undefined where nothing fences. */
  constructor(
    private readonly options: RunOptions,
    private readonly fenceEnv: Record<string, string> | undefined,
  ) {}

  /** The client for a group of this profile (throws MissingCredentialsError as the provider would). */
  for(profile: string | undefined): UserGroupsClient {
    const key = profile ?? "\u0000";
    let client = this.clients.get(key);
    if (client === undefined) {
      const env: NodeJS.ProcessEnv = { ...process.env, ...this.options.envVars, ...this.fenceEnv };
      const built = serviceClientOf(UserGroupsClient, resolveCredentials(profile, runConfigLookup(this.options), env), env);
      if (built.runFence) this.fences.push(built.runFence);
      client = built.client;
      this.clients.set(key, client);
    }
    return client;
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    for (const client of clients) await client.close().catch(() => undefined);
    for (const fence of this.fences.splice(0)) {
      const closable = fence as RunFence & { close?: () => Promise<void> };
      await closable.close?.().catch(() => undefined);
    }
  }
}
