// Each caller of a fleet batch its own outcome (CONTRACT F5), even when the
// engine fails a run for a reason it charges to no single group: the groups
// the run did settle keep their outcome, the rest run again, and a set that
// fails whole is halved until the culprit runs alone. And an error a caller
// gets names no other tenant: every other member's id, resource name and URN
// is scrubbed from a copy of it (message, output, causes).

/** One group's outcome. */
export type GroupOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** Why a run failed when it charged the failure to none of the groups it left unsettled. */
export interface RunFailure {
  readonly error: unknown;
  /** What the engine said of the run itself (its run-level diagnostics). */
  readonly lines: readonly string[];
}

/** What one engine run of some of the batch's groups settled. */
export interface RunAttempt<T> {
  /** Groups done, or failed by a diagnostic of their own. */
  readonly settled: ReadonlyMap<string, GroupOutcome<T>>;
  /** Set when the run failed: the groups it did not settle may be fine on their own. */
  readonly failure?: RunFailure;
}

export interface SettleOptions<T> {
  /** The error of a group that fails alone (its run failed with it the only one left), or that isolation gave up on. */
  readonly unsettledError: (resourceName: string, failure: RunFailure | undefined, alone: boolean) => unknown;
  /** Told each outcome as soon as a run settles it (a later run of the batch may still throw). */
  readonly onSettled: (resourceName: string, outcome: GroupOutcome<T>) => void;
}

/**
 * Failed runs (settling nothing) a batch of `size` may spend on isolation:
 * enough to find two culprits by halving; when every run fails (a backend
 * down), the batch fails after these, not after one run per group.
 */
export function isolationBudget(size: number): number {
  return 2 * Math.ceil(Math.log2(Math.max(size, 1))) + 1;
}

/**
 * Runs `attempt` on all the names, then on what each run left unsettled: a
 * failed run that settled some groups runs again for the rest; one that settled
 * none is halved (each half in its own run) until a group fails alone, or the
 * budget of failed runs is spent (then every group not settled yet fails). A run
 * that succeeded but said nothing of a group settles it with `unsettledError`.
 * Every name is settled exactly once, through `onSettled`, unless `attempt` throws.
 */
export async function settleEach<T>(
  names: readonly string[],
  attempt: (names: readonly string[]) => Promise<RunAttempt<T>>,
  options: SettleOptions<T>,
): Promise<void> {
  let failuresLeft = isolationBudget(names.length);
  const pending: (readonly string[])[] = [names];
  const fail = (rest: readonly string[], failure: RunFailure | undefined, alone: boolean) => {
    for (const name of rest) options.onSettled(name, { ok: false, error: options.unsettledError(name, failure, alone) });
  };
  while (pending.length > 0) {
    const group = pending.shift()!;
    const run = await attempt(group);
    for (const name of group) {
      const outcome = run.settled.get(name);
      if (outcome !== undefined) options.onSettled(name, outcome);
    }
    const rest = group.filter((name) => !run.settled.has(name));
    if (rest.length === 0) continue;
    if (run.failure === undefined) {
      fail(rest, undefined, false);
    } else if (rest.length < group.length) {
      pending.push(rest); // progress: the run got some groups done before it failed
    } else if (rest.length === 1) {
      fail(rest, run.failure, true);
    } else if (--failuresLeft > 0) {
      const half = Math.ceil(rest.length / 2);
      pending.push(rest.slice(0, half), rest.slice(half));
    } else {
      fail([...rest, ...pending.splice(0).flat()], run.failure, false);
    }
  }
}

const OTHER_GROUP = "[another group]";

/** Characters that may continue an id: an occurrence of an id is scrubbed only where it stands whole. */
const ID_CHAR = "[A-Za-z0-9_.%-]";

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Replaces every occurrence of the given texts (longest first) with
 * "[another group]". Ids are replaced where they stand whole (not inside a
 * longer word); resource names and URNs wherever they occur.
 */
export function othersScrubber(others: readonly { readonly userGroupId: string; readonly resourceName: string; readonly urn: string }[]): (text: string) => string {
  const anywhere = [...new Set(others.flatMap((o) => [o.urn, o.resourceName]))].sort((a, b) => b.length - a.length);
  const whole = [...new Set(others.map((o) => o.userGroupId))].sort((a, b) => b.length - a.length);
  if (anywhere.length === 0 && whole.length === 0) return (text) => text;
  const pattern = new RegExp(
    [...anywhere.map(escapeRegExp), ...whole.map((id) => `(?<!${ID_CHAR})${escapeRegExp(id)}(?!${ID_CHAR})`)].join("|"),
    "gu",
  );
  return (text) => text.replace(pattern, OTHER_GROUP);
}

/**
 * A copy of `value` with every string passed through `scrub`: an error keeps
 * its class and fields (so `instanceof` and `code` still work), its causes and
 * a CommandError's captured output copied likewise. The original is untouched:
 * each caller gets a copy of its own.
 */
export function scrubbedCopy<T>(value: T, scrub: (text: string) => string, depth = 0): T {
  if (typeof value === "string") return scrub(value) as T;
  if (value === null || typeof value !== "object" || depth > 6) return value;
  if (Array.isArray(value)) return value.map((item: unknown) => scrubbedCopy(item, scrub, depth + 1)) as T;
  const prototype = Object.getPrototypeOf(value) as object | null;
  if (!(value instanceof Error) && prototype !== Object.prototype && prototype !== null) return value;
  const copy = Object.create(prototype) as Record<PropertyKey, unknown>;
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
    const own = "value" in descriptor ? descriptor.value : (value as Record<PropertyKey, unknown>)[key];
    Object.defineProperty(copy, key, {
      value: scrubbedCopy(own, scrub, depth + 1),
      writable: true,
      enumerable: descriptor.enumerable ?? false,
      configurable: true,
    });
  }
  return copy as T;
}
