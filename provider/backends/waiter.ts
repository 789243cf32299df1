// This process as a waiter in the queues of the run leases (first come, first
// served): a waiter is a replica (a process), not a store, so that a run that
// opens a new store for each try of its lock wait (shards/run-shard.ts) keeps
// its place between tries. The one piece of process-wide memory of the lease
// stores, kept here and handed to them (LeaseStoreOptions.waiter) rather than
// held by any of them.
import { randomUUID } from "node:crypto";

/** Where a waiter stood in a queue (its `since`, the store's clock) and when it last tried (this process's clock). */
export interface QueuePlace {
  readonly since: number | string;
  readonly triedAt: number;
}

export interface Waiter {
  /** Its id in every queue. */
  readonly id: string;
  /** Its place in each queue it waits in, by the store's key: a store that closes leaves the queue, the next one takes the place back. */
  readonly places: Map<string, QueuePlace>;
}

/** This process. */
export const PROCESS_WAITER: Waiter = { id: randomUUID(), places: new Map() };
