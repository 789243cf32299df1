// The engine's side of the record-first sign-up (sign-ups.ts): a shard's run
// lease taken as every run takes it (the lock wait, engine/takeover.ts's
// underRunLease: a dead run's leftovers taken over first, the record's `created`
// entries among them), the directory's claims under it (shards/directory-rule.ts),
// the record written through the lease (a lease no longer ours refuses it), the
// create sent with the provider's own client (service-client.ts: rate budget,
// the run's fence), and the adopting run (engine/takeover.ts adoptCreated).
import { adoptCreated, assertStateIsData, exportState, knownSecretsKey, passphraseProofSecret, proofKeyOf, underRunLease, withLockWait } from "../../engine";
import { createdProofKey, provenEntry } from "../../lease";
import { normalizeInputs } from "../../../logic/inputs";
import { createUserGroup } from "../../../logic/operations";
import { ShardClaims } from "../../shards";
import { StackLockedError } from "../../backend";
import type { RunOptions } from "../../model";
import { FLEET_MARKER_OUTPUT } from "../fleet-stack";
import type { FleetShards } from "../fleet-shards";
import { LeaseClients } from "./service-client";
import type { HeldShard, SignUpSeam } from "./sign-ups";

/** What underLease answers on a backend without a run lease (it keeps no record): its sign-ups go the slow path. */
export const NO_RUN_LEASE: unique symbol = Symbol("no run lease");

/** The real seam: the shard's lease, record, client and adopting run. */
export function engineSignUpSeam(options: RunOptions, lockTimeoutMs: number, shards: FleetShards): SignUpSeam {
  /** Shards whose state names a secrets manager other than the passphrase one: no key proves their entries, never asked again. */
  const keyless = new Set<number>();
  return {
    underLease: async (shard, body) => {
      const stackName = shards.stackNameOf(shard);
      const directory = (await shards.sharded()).directory;
      // The body runs once: an error of it is carried out of the lock wait, never tried again.
      let failed: { error: unknown } | undefined;
      const value = await withLockWait({ ...options, stack: stackName, lockTimeoutMs }, async () => {
        const opened = await shards.open(shard);
        if (opened.store === undefined || keyless.has(shard)) return NO_RUN_LEASE;
        return underRunLease(
          {
            stack: opened.stack,
            stackName,
            backendUrl: opened.backendUrl,
            store: opened.store,
            adopt: true,
            outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
            ...(options.onOutput ? { onOutput: options.onOutput } : {}),
            ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
            ...(options.onTakeover ? { onTakeover: options.onTakeover } : {}),
          },
          async (_signal, lease) => {
            if (lease === undefined) return NO_RUN_LEASE;
            // F4: a Pulumi lock the takeover left (a live run's, or one of another host not proven dead) is waited for as a
            // run waits for it (the lock wait tries again, then StackLockTimeoutError): no request goes out meanwhile.
            if ((await lease.store.pulumiLocks()).length > 0) throw new StackLockedError(stackName);
            // The key that proves the record's entries (lease/created-proof.ts): known from a state read of this process, else read
            // once. A stack without one (not the passphrase secrets manager, or a new stack no run has written yet) goes the slow path.
            // (The passphrase checked against a state of this stack before: the proof secret is the passphrase's alone.)
            const known = knownSecretsKey(opened.stack) !== undefined ? await passphraseProofSecret(opened.stack) : undefined;
            let proofKey = known !== undefined ? createdProofKey(known, stackName) : undefined;
            if (proofKey === undefined) {
              const state = await exportState(opened.stack);
              proofKey = await proofKeyOf(opened.stack, state, stackName);
              const manager = (state.deployment as { secrets_providers?: { type?: unknown } } | undefined)?.secrets_providers?.type;
              if (proofKey === undefined && typeof manager === "string" && manager !== "passphrase") keyless.add(shard);
            }
            if (proofKey === undefined) return NO_RUN_LEASE;
            const claims = new ShardClaims(directory, stackName, shard);
            const clients = new LeaseClients(options, lease.store.fenceEnv?.(lease.current));
            const held: HeldShard = {
              epoch: lease.epoch,
              prove: (entry) => provenEntry(proofKey, entry),
              claim: (names) => claims.claimTargets(names),
              record: async (change) => {
                await lease.updateWith((record) => ({ created: change(record.created ?? []) }));
                if (lease.lost) throw lease.signal.reason;
              },
              create: async (spec) => {
                const outputs = await createUserGroup(clients.for(spec.profile), normalizeInputs(spec));
                return { name: outputs.name, token: outputs.token, teamId: outputs.teamId, ...(outputs.apiEnvironmentTag !== undefined ? { apiEnvironmentTag: outputs.apiEnvironmentTag } : {}) };
              },
              adopt: async (entries) => {
                // F10: the state an engine run reads is data this package writes, checked first as before every run.
                assertStateIsData(await exportState(opened.stack), stackName);
                const outcome = await adoptCreated(
                  {
                    lease,
                    stack: opened.stack,
                    stackName,
                    shard,
                    proofKey,
                    outputs: () => ({ [FLEET_MARKER_OUTPUT]: true }),
                    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
                    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
                  },
                  entries,
                );
                return outcome.adopted;
              },
            };
            try {
              return await body(held);
            } catch (error) {
              failed = { error };
              return undefined;
            } finally {
              await clients.close();
            }
          },
        );
      });
      if (failed) throw failed.error;
      return value;
    },
  };
}
