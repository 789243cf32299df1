// A run's marks on its commands' environment (docs/fleet-replicas.md, "What kept it off
// the default"): the run id every process of a run carries (a dead run's takeover and
// stopLostRun find its processes by it) and, where the backend fences, its epoch.
// withRunMarks gives them to the commands the run itself starts and to no other command
// of the same workspace (a fleet's shard workspace is shared by its calls); markWorkspace
// puts them on a workspace that runs nothing else meanwhile (recover's).
import type { LocalWorkspace } from "@pulumi/pulumi/automation";
import { AsyncLocalStorage } from "node:async_hooks";

/** Puts the marks on the workspace's environment itself, for every command of it until the returned function puts it back. */
export function markWorkspace(workspace: LocalWorkspace, marks: Readonly<Record<string, string>>): () => void {
  const env = workspace.envVars;
  const saved = new Map(Object.keys(marks).map((key) => [key, env[key]]));
  Object.assign(env, marks);
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
  };
}

/**
 * Each run's marks, by the workspace environment they belong to, in that run's
 * async context only: a command of the workspace started from elsewhere (another
 * call of the same fleet reading the state while a sign-up session holds the
 * lease) carries none of them, so that stopLostRun, which kills this host's
 * processes carrying a lost run's id, never kills a read outside the run
 * (PostgreSQL's fault history: a `pulumi stack export` SIGKILLed that way).
 */
const runMarks = new AsyncLocalStorage<ReadonlyMap<object, Readonly<Record<string, string>>>>();
/** The workspace environments made to show their run's marks: each one's own object, by the view in its place. */
const ownEnvOf = new WeakMap<object, Record<string, string>>();

/** The workspace's own environment object, its `envVars` replaced (once) by a view adding the marks of the run in whose context it is read. */
function markableEnv(workspace: LocalWorkspace): Record<string, string> {
  const current = workspace.envVars;
  const own = ownEnvOf.get(current);
  if (own !== undefined) return own;
  const marksOf = (target: object) => runMarks.getStore()?.get(target);
  const view = new Proxy(current, {
    get: (target, key, receiver) => (typeof key === "string" && marksOf(target)?.[key] !== undefined ? marksOf(target)![key] : Reflect.get(target, key, receiver)),
    has: (target, key) => (typeof key === "string" && marksOf(target)?.[key] !== undefined) || Reflect.has(target, key),
    ownKeys: (target) => [...new Set([...Reflect.ownKeys(target), ...Object.keys(marksOf(target) ?? {})])],
    getOwnPropertyDescriptor: (target, key) => {
      const marked = typeof key === "string" ? marksOf(target)?.[key] : undefined;
      return marked !== undefined ? { value: marked, writable: true, enumerable: true, configurable: true } : Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  ownEnvOf.set(view, current);
  (workspace as { envVars: Record<string, string> }).envVars = view;
  return current;
}

/** Runs `body` with these marks on every command of the workspace started within it (and by what it starts), and on no other. */
export function withRunMarks<T>(workspace: LocalWorkspace, marks: Readonly<Record<string, string>>, body: () => Promise<T>): Promise<T> {
  const env = markableEnv(workspace);
  const current = runMarks.getStore();
  const next = new Map(current ?? []);
  next.set(env, { ...current?.get(env), ...marks });
  return runMarks.run(next, body);
}

/** Runs `body` outside any run's marks: work a run's context starts that is not the run's (a fleet's next batches, started from a sign-up session). */
export function outsideRuns<T>(body: () => T): T {
  return runMarks.exit(body);
}
