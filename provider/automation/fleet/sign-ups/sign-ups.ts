// The record-first sign-up (issue #44; docs/fleet-replicas.md, "A sign-up
// answered before its engine run"): a new group's ensure answered before any
// engine run. Under the shard's run lease, for each new group: its directory
// claim, its entry in the run record (inputs and epoch, never its token) written
// before the request, the create sent by the fleet itself, the caller answered
// with the service's token; then one targeted `up` adopts what the record holds
// into the state, and the lease is let go only once that is done. Calls for the
// shard that arrive meanwhile join under the same lease.
//
// This file is the logic, over a seam (SignUpSeam) that a unit test gives in
// memory; sign-up-lease.ts is the engine's (the lease, the record, the client,
// the adopting run).
import type { CreatedEntry } from "../../lease";
import { createdEntryOf } from "../../engine";
import { type GroupSpec, type EnsuredGroup } from "../../model";
import { type FleetGroup } from "../fleet-state";
import { GroupMoved } from "../errors";
import type { GroupOutcome } from "../fleet-isolation";
import { type GroupOutputs, holdsAsAsked, resultOf } from "../requests";

/** What the fleet may do holding one shard's run lease (sign-up-lease.ts: the engine's). */
export interface HeldShard {
  /** The lease's epoch (PostgreSQL), undefined where leases have none. */
  readonly epoch: number | undefined;
  /** The entry with its proof under the stack's secret (lease/created-proof.ts): only entries this holder makes are proven. */
  prove(entry: CreatedEntry): CreatedEntry;
  /** Claims the groups for this shard in the directory; answers those a concurrent run put in another shard (not to be created here). */
  claim(names: readonly string[]): Promise<ReadonlyMap<string, number>>;
  /** Rewrites the record's created entries (as they are once the writes before are done); throws once the lease is no longer ours. */
  record(change: (created: readonly CreatedEntry[]) => CreatedEntry[]): Promise<void>;
  /** Sends the create of one group to the service (the provider's own rules: get-or-create, adoptExisting). */
  create(spec: GroupSpec): Promise<GroupOutputs>;
  /** One targeted run adopting these entries into the state (adoptExisting); they leave the record. Answers the adopted ones. */
  adopt(entries: readonly CreatedEntry[]): Promise<readonly string[]>;
}

/** The fleet's way to hold a shard's lease for a while. */
export interface SignUpSeam {
  /**
   * Runs `body` holding the shard's run lease (taken as a run takes it: lock wait, takeover of a dead run first), released
   * after; on a backend without a lease (no record to keep), answers without running it.
   */
  underLease<T>(shard: number, body: (held: HeldShard) => Promise<T>): Promise<T | symbol | undefined>;
}

/** What the run record holds for one group signed up (engine/created-entries.ts: an intent holds the same). */
export { createdEntryOf };

/** The entries an adopting run takes: the record's, less those a run adopts already (`inFlight`). */
export function adoptionPlan(recorded: readonly CreatedEntry[], inFlight: ReadonlySet<string>): CreatedEntry[] {
  return recorded.filter((entry) => !inFlight.has(entry.resourceName));
}

/** A group this fleet answered and has not adopted into the state yet. */
interface Answered {
  readonly spec: GroupSpec;
  readonly outputs: GroupOutputs;
}

/** One request of a sign-up: its group, its spec, and where its outcome goes. */
export interface SignUpRequest {
  readonly resourceName: string;
  readonly spec: GroupSpec;
  /** Its outcome: the service's answer, a move to another shard; a request it cannot serve goes back (`fallBack`). */
  readonly settle: (outcome: GroupOutcome<EnsuredGroup>) => void;
  /** Not served here (the service refused or failed it, the shard has no lease): the slow path runs it, and fails it exactly as before. */
  readonly fallBack: () => void;
}

interface Session {
  /** Requests served (or being served) under this lease, for the end condition. */
  serving: number;
  /** Wakes the session's loop (a request arrived, a serve or an adoption ended). */
  wake: () => void;
  readonly queue: SignUpRequest[];
  /** Set once the loop decided to end: a later request starts a new session. */
  ending: boolean;
  /** The session's end: its adoption done, its lease released (never rejects). */
  readonly done: Promise<void>;
}

/** The fleet's record-first sign-ups, one session per shard at a time. */
export class SignUps {
  private readonly sessions = new Map<number, Session>();
  private readonly answered = new Map<string, Answered>();
  /** Groups submitted and not yet answered or sent back. */
  private readonly busy = new Set<string>();
  /** Sessions that ended (for callers who measure: one lease, one adopting run or more each). */
  adoptingRuns = 0;

  constructor(private readonly seam: SignUpSeam) {}

  /** A group this fleet answered and has not adopted yet, if held as `spec` asks: its answer (change same, the token it answered). */
  answeredAsAsked(resourceName: string, spec: GroupSpec): EnsuredGroup | undefined {
    const got = this.answered.get(resourceName);
    return got && holdsAsAsked(fleetGroupOf(resourceName, got), spec) ? resultOf(spec, "same", got.outputs) : undefined;
  }

  /** The slow path runs these groups under the lease (its state read there is the truth): no answer from memory for them. */
  forget(names: Iterable<string>): void {
    for (const name of names) this.answered.delete(name);
  }

  /** Is the group answered here and not yet in the state? */
  pending(resourceName: string): boolean {
    return this.answered.has(resourceName);
  }

  /** The groups answered here and not yet adopted (list() shows them at once). */
  listed(): FleetGroup[] {
    return [...this.answered].map(([name, got]) => fleetGroupOf(name, got));
  }

  /** Resolves once the shard has no session under way (its adoption done, its lease let go). */
  async idle(shard: number): Promise<void> {
    for (let session = this.sessions.get(shard); session !== undefined; session = this.sessions.get(shard)) await session.done;
  }

  /** Resolves once no shard has a session under way. */
  async closeAll(): Promise<void> {
    for (const shard of [...this.sessions.keys()]) await this.idle(shard);
  }

  /** Signs up these new groups of the shard; each request is settled or falls back. */
  submit(shard: number, asked: readonly SignUpRequest[]): void {
    // A group already on its way here (a later batch asking it again before its answer) goes the slow path, which waits
    // for this shard's sign-ups to be adopted: one record entry and one create per group at a time.
    const requests: SignUpRequest[] = [];
    for (const request of asked) {
      if (this.busy.has(request.resourceName)) request.fallBack();
      else {
        this.busy.add(request.resourceName);
        const done = () => this.busy.delete(request.resourceName);
        requests.push({
          ...request,
          settle: (outcome) => {
            done();
            request.settle(outcome);
          },
          fallBack: () => {
            done();
            request.fallBack();
          },
        });
      }
    }
    if (requests.length === 0) return;
    const session = this.sessions.get(shard);
    if (session === undefined || session.ending) this.start(shard, session?.done, requests);
    else {
      session.queue.push(...requests);
      session.wake();
    }
  }

  private start(shard: number, after: Promise<void> | undefined, requests: readonly SignUpRequest[]): Session {
    let wake: () => void = () => {};
    let woken = new Promise<void>((resolve) => (wake = resolve));
    const session: Session = {
      serving: 0,
      wake: () => wake(),
      queue: [...requests],
      ending: false,
      done: Promise.resolve(),
    };
    const nextWake = () => {
      woken = new Promise<void>((resolve) => (wake = resolve));
    };
    const run = async () => {
      // One process holds a shard's lease once: a new session waits for the last one's release (no backoff of the lock wait).
      if (after) await after;
      let ran = false;
      let timedOut: unknown;
      try {
        await this.seam.underLease(shard, async (held) => {
          ran = true;
          const inFlight = new Set<string>();
          let adopting: Promise<void> | undefined;
          let created: string[] = [];
          const serves = new Set<Promise<void>>();
          for (;;) {
            const requests = session.queue.splice(0);
            if (requests.length > 0) {
              const serve = this.serve(held, requests, (name) => created.push(name)).finally(() => {
                serves.delete(serve);
                session.wake();
              });
              serves.add(serve);
            }
            if (adopting === undefined && created.length > 0) {
              // One run adopts what this session's finished serves recorded (each entry's request answered); later ones, the next run.
              const names = new Set(created);
              created = [];
              // A run that fails leaves its entries in the record: the lease's next holder adopts them (its takeover).
              adopting = this.adopt(held, names, inFlight).catch(() => undefined).finally(() => {
                adopting = undefined;
                session.wake();
              });
            }
            if (session.queue.length > 0) continue;
            if (serves.size === 0 && adopting === undefined && created.length === 0) break;
            nextWake();
            await woken;
          }
          session.ending = true;
        });
      } catch (error) {
        // The lease was lost, or could not be taken: what waits here goes the slow path, which says so in its own words
        // (RunLeaseLostError) or serves it; but the stack stayed locked for the whole lock timeout, what waits here is told so
        // now (StackLockTimeoutError), not made to wait a second time on the slow path.
        ran = false;
        if ((error as { code?: unknown } | null)?.code === "stack_lock_timeout") timedOut = error;
      }
      if (!ran || session.queue.length > 0) {
        // No lease (a backend without one, or not taken): the slow path serves what waits here.
        session.ending = true;
        for (const request of session.queue.splice(0)) {
          if (timedOut !== undefined) request.settle({ ok: false, error: timedOut });
          else request.fallBack();
        }
      }
    };
    const done = run().finally(() => {
      if (this.sessions.get(shard) === session) this.sessions.delete(shard);
    });
    (session as { done: Promise<void> }).done = done;
    this.sessions.set(shard, session);
    return session;
  }

  /** Serves some requests under the held lease: claims, the record first, then the creates; `recorded` names each entry left in the record. */
  private async serve(held: HeldShard, requests: readonly SignUpRequest[], recorded: (name: string) => void): Promise<void> {
    let moved: ReadonlyMap<string, number>;
    try {
      moved = await held.claim(requests.map((request) => request.resourceName));
    } catch {
      for (const request of requests) request.fallBack();
      return;
    }
    const here = requests.filter((request) => {
      const other = moved.get(request.resourceName);
      if (other !== undefined) request.settle({ ok: false, error: new GroupMoved(request.resourceName, other) });
      return other === undefined;
    });
    // One request per group (a batch asks each group once; a second ask of one in flight waits for the slow path).
    const entries = here.map((request) => held.prove(createdEntryOf(request.resourceName, request.spec, held.epoch)));
    const names = new Set(entries.map((entry) => entry.resourceName));
    try {
      // Durable before any request goes out: a crash from here on is adopted by the next holder.
      await held.record((created) => [...created.filter((entry) => !names.has(entry.resourceName)), ...entries]);
    } catch {
      for (const request of here) request.fallBack();
      return;
    }
    const failed = new Set<string>();
    await Promise.all(
      here.map(async (request) => {
        try {
          const outputs = await held.create(request.spec);
          this.answered.set(request.resourceName, { spec: request.spec, outputs });
          request.settle({ ok: true, value: resultOf(request.spec, "create", outputs) });
        } catch {
          failed.add(request.resourceName);
        }
      }),
    );
    for (const name of names) if (!failed.has(name)) recorded(name);
    if (failed.size > 0) {
      // Refused or failed: its entry leaves the record, and the slow path asks again (its error, as before, its caller's alone).
      await held.record((created) => created.filter((entry) => !failed.has(entry.resourceName))).catch(() => undefined);
      for (const request of here) if (failed.has(request.resourceName)) request.fallBack();
    }
  }

  /** One adopting run of what the record holds of these groups; the adopted ones are answered by the state from then on. */
  private async adopt(held: HeldShard, names: ReadonlySet<string>, inFlight: Set<string>): Promise<void> {
    try {
      let recorded: readonly CreatedEntry[] = [];
      await held.record((created) => {
        recorded = created;
        return [...created];
      });
      const plan = adoptionPlan(recorded, inFlight).filter((entry) => names.has(entry.resourceName));
      if (plan.length === 0) return;
      for (const entry of plan) inFlight.add(entry.resourceName);
      this.adoptingRuns += 1;
      try {
        await held.adopt(plan);
      } finally {
        for (const entry of plan) inFlight.delete(entry.resourceName);
      }
    } finally {
      // Adopted: the state answers them now. Not adopted (the run failed, the lease was lost): the record keeps them for
      // the next holder's takeover, and this replica no longer answers them from memory (a later call reads the state
      // under the lease, after that takeover; a remove elsewhere meanwhile cannot leave a stale answer here).
      for (const name of names) this.answered.delete(name);
    }
  }
}

function fleetGroupOf(resourceName: string, got: Answered): FleetGroup {
  const { spec, outputs } = got;
  return {
    resourceName,
    userGroupId: spec.userGroupId,
    ...(spec.profile !== undefined ? { profile: spec.profile } : {}),
    name: outputs.name,
    mapping: spec.mapping ?? {},
    ...(spec.properties !== undefined && spec.properties !== null ? { properties: spec.properties } : {}),
    ...(spec.rotationTrigger !== undefined ? { rotationTrigger: spec.rotationTrigger } : {}),
    token: outputs.token,
    teamId: outputs.teamId,
    ...(outputs.apiEnvironmentTag !== undefined ? { apiEnvironmentTag: outputs.apiEnvironmentTag } : {}),
  };
}
