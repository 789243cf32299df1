// One fixture for what most end-to-end files need: a fake server with its API
// keys, a throwaway Pulumi environment (file backend, work directory, offline
// settings: pulumi-env.ts), and the run options and environment that point a
// run at both. `useStackFixture` registers a beforeAll that starts them and an
// afterAll that closes the server and removes the environment, in the scope
// it is called in (a file or a describe). Hooks of the file itself registered
// after it run after it (beforeAll) and before it (afterAll): vitest's
// default sequence.hooks "stack".
//
//   const KEY = "fleet-customer-key-0001";
//   const { server, env, runOptions } = useStackFixture({ label: "fleet", apiKeys: [KEY], passphrase: "fleet-test" });
//   ...
//   await provisionUserGroups({ ...runOptions("prod"), groups });
//   expect(server.groups()).toHaveLength(1);
//
// `server` and `env` can be taken apart at once, at collection time: each is a
// stand-in that forwards to the real one once beforeAll has made it (and
// says so if it is used before then, or after afterAll).
// Both come from the testing entry (one harness for users' tests and ours): the
// server is startEmulator's, started in this process with the fixture's keys, and
// the environment is createStackDirectory's (pulumi-env.ts).
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { type ApiKeyConfig, type FakeServer, type FakeServerOptions, startEmulator, type TestEmulator } from "../../testing";
import { createPulumiTestEnv, type PulumiTestEnv } from "./pulumi-env";

export interface StackFixtureOptions {
  /** Names the environment's directory under .work/ (and the default key). */
  readonly label: string;
  /**
   * The fake server's keys; a string is a read-write key of the Customer environment. The first is `key`, the one
   * `envVars` and `runOptions` give as USER_GROUPS_API_KEY. Default one Customer key, `<label>-key-0001`.
   */
  readonly apiKeys?: ReadonlyArray<string | ApiKeyConfig>;
  /** The fake server's other options (a rate limit, the journal's size). */
  readonly server?: Omit<FakeServerOptions, "apiKeys">;
  /** The passphrase `runOptions` gives; default none (the environment's PULUMI_CONFIG_PASSPHRASE applies). */
  readonly passphrase?: string;
}

/** What `runOptions` gives every run: the engine's environment pointed at the fake server. */
export interface StackRunOptions {
  readonly stack: string;
  readonly workDir: string;
  readonly passphrase?: string;
  readonly envVars: Record<string, string>;
}

export interface StackFixture {
  /** The fake server (forwards to it once beforeAll has started it). */
  readonly server: FakeServer;
  /** The Pulumi environment (forwards to it once beforeAll has made it). */
  readonly env: PulumiTestEnv;
  /** The first API key. */
  readonly key: string;
  /** The environment's variables (file backend, PULUMI_HOME, PATH...) with USER_GROUPS_BASE_URL and USER_GROUPS_API_KEY; `extra` last. */
  envVars(extra?: Record<string, string>): Record<string, string>;
  /** `{ stack, workDir: <env.workDir>/<stack>, passphrase, envVars: envVars() }`, then `extra` (which may replace any of them). */
  runOptions<E extends object = Record<never, never>>(stack: string, extra?: E): StackRunOptions & E;
}

export function useStackFixture(options: StackFixtureOptions): StackFixture {
  const apiKeys: ApiKeyConfig[] = (options.apiKeys ?? [`${options.label}-key-0001`]).map((entry) =>
    typeof entry === "string" ? { key: entry, environment: "Customer" } : entry,
  );
  const key = apiKeys[0]?.key;
  if (key === undefined) throw new Error("useStackFixture: apiKeys must hold at least one key");
  let emulator: TestEmulator | undefined;
  let server: FakeServer | undefined;
  let env: PulumiTestEnv | undefined;

  beforeAll(async () => {
    emulator = await startEmulator({ reuse: false, server: { ...options.server, apiKeys } });
    server = emulator.server;
    env = createPulumiTestEnv(options.label);
  });
  afterAll(async () => {
    try {
      await emulator?.close();
    } finally {
      emulator = undefined;
      env?.cleanup();
      server = undefined;
      env = undefined;
    }
  });

  const serverHandle = forwarding("server", () => server);
  const envHandle = forwarding("env", () => env);
  const envVars = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...envHandle.envVars,
    USER_GROUPS_BASE_URL: serverHandle.url,
    USER_GROUPS_API_KEY: key,
    ...extra,
  });
  return {
    server: serverHandle,
    env: envHandle,
    key,
    envVars,
    runOptions: <E extends object = Record<never, never>>(stack: string, extra?: E): StackRunOptions & E =>
      ({
        stack,
        workDir: path.join(envHandle.workDir, stack),
        ...(options.passphrase !== undefined ? { passphrase: options.passphrase } : {}),
        envVars: envVars(),
        ...extra,
      }) as StackRunOptions & E,
  };
}

/** A stand-in for what `current` returns once it is there: every read goes to it, methods bound to it. */
function forwarding<T extends object>(name: string, current: () => T | undefined): T {
  const target = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`the stack fixture's ${name} is used outside its beforeAll..afterAll`);
    return value;
  };
  return new Proxy({} as T, {
    get(_stand, property) {
      const real = target();
      const value: unknown = Reflect.get(real, property, real);
      return typeof value === "function" ? value.bind(real) : value;
    },
    has: (_stand, property) => Reflect.has(target(), property),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor(_stand, property) {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), property);
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
    },
    set: () => {
      throw new Error(`the stack fixture's ${name} is read-only`);
    },
  });
}
