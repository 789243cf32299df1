// One call for a user's test of their own Pulumi program against the emulator:
// a namespace of a running emulator (started, or reused through its URL), a
// private backend directory (0700) and stack, the environment the engine needs
// (a random passphrase, the backend, no update check, no plugin downloads, the
// emulator's URL and a key), and runs through the Automation API that return
// the outputs (secrets stay marked secret) and the requests each run sent.
// Everything is removed on every way out: dispose(), `await using`, a failed
// setup, and the process's exit for a stack nobody disposed.
import {
  type ConfigMap,
  type DestroyOptions,
  LocalWorkspace,
  type OutputMap,
  type PreviewOptions,
  PulumiCommand,
  type PulumiFn,
  type RefreshOptions,
  type Stack,
  type UpOptions,
} from "@pulumi/pulumi/automation";
import { cpSync, readdirSync } from "node:fs";
import path from "node:path";
import type { JournalEntry, StoredGroup } from "../fake-server/index.js";
import { systemClock } from "../provider/clock.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import { type ChangeCounts, trackChanges } from "./changes.js";
import { createStackDirectory, DEFAULT_WORK_ROOT } from "./environment.js";
import { startEmulator, type TestEmulator, type TestNamespace, type TestNamespaceOptions } from "./emulator.js";
import type { RequestCount, RequestQuery } from "./requests.js";
import { scrub } from "./requests.js";


export interface TestStackOptions {
  /** An inline program (give this or `projectDir`). */
  readonly program?: PulumiFn;
  /** A Pulumi project directory (Pulumi.yaml); it is copied into the stack's private directory, node_modules left out. */
  readonly projectDir?: string;
  /** The project's name for an inline program (default `user-groups-test`). */
  readonly projectName?: string;
  /** Default `test`. */
  readonly stackName?: string;
  /** The emulator to use: one from startEmulator(), or the base URL of a running one. Default: USER_GROUPS_EMULATOR_URL, else one started for this stack. */
  readonly emulator?: TestEmulator | string;
  /** The namespace's keys and seeded groups. */
  readonly namespace?: TestNamespaceOptions;
  /** Stack config set before the first run (`{ value, secret }`; keys may use path syntax). */
  readonly config?: ConfigMap;
  /**
   * Where the provider finds the emulator: "environment" (default) puts the namespace's URL and key in
   * USER_GROUPS_BASE_URL and USER_GROUPS_API_KEY; "none" leaves them out, for a test of credentials your
   * program or the stack's config gives (`namespace.url` and `namespace.key` are still yours to use).
   */
  readonly credentials?: "environment" | "none";
  /** The secrets provider's passphrase (default a random one). */
  readonly passphrase?: string;
  /** More environment for the engine and the provider (wins over the defaults). */
  readonly envVars?: Readonly<Record<string, string>>;
  /** The directory the stack's private directory is made in (default `.user-groups-test` under the current directory). */
  readonly workRoot?: string;
  /** A directory put first on PATH for the engine (where `pulumi` is). */
  readonly pulumiBinDir?: string;
  /** A PULUMI_HOME of the stack's own (default false: the user's, where plugins are). */
  readonly isolatedPulumiHome?: boolean;
}

/** What one run did. */
export interface RunResult {
  /** The stack's outputs after the run; a secret output keeps `secret: true`. */
  readonly outputs: OutputMap;
  /** The requests the run sent to the emulator (redacted), oldest first. */
  readonly requests: JournalEntry[];
  /** What the run did (or, for a preview, would do) to the UserGroup resources. */
  readonly changes: ChangeCounts;
  /** The engine's output. */
  readonly stdout: string;
}

export interface TestStack {
  readonly stack: Stack;
  readonly emulator: TestEmulator;
  /** The stack's share of the emulator: its key, groups, requests, faults. */
  readonly namespace: TestNamespace;
  /** The stack's private directory (0700): the work directory and the backend are in it. */
  readonly dir: string;
  readonly workDir: string;
  readonly backendDir: string;
  /** The engine's environment (holds the passphrase and the key: never print it). */
  readonly envVars: Readonly<Record<string, string>>;
  up(options?: UpOptions): Promise<RunResult>;
  preview(options?: PreviewOptions): Promise<RunResult>;
  refresh(options?: RefreshOptions): Promise<RunResult>;
  destroy(options?: DestroyOptions): Promise<RunResult>;
  outputs(): Promise<OutputMap>;
  /** The namespace's groups as the emulator stores them. */
  groups(): Promise<StoredGroup[]>;
  /** Every request of the namespace so far; with a query, those that match. */
  requests(query?: RequestQuery): Promise<JournalEntry[]>;
  /** Asserts on every request so far (see expectRequests). */
  expectRequests(query: RequestQuery, count?: RequestCount): Promise<JournalEntry[]>;
  /** Removes everything the stack made; stops the emulator if it started one. Safe to call twice. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * `--require "<pulumi-user-groups/otel-preload>"` for NODE_OPTIONS: in Pulumi's dynamic-provider host it defers the
 * modules a provider never loads (TypeScript, Arborist); elsewhere, and with no OTEL_* set, it does nothing.
 * None where the package cannot resolve its own entry.
 */
function providerPreload(): string | undefined {
  try {
    const file = require.resolve("pulumi-user-groups/otel-preload");
    return `--require "${file.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
  } catch {
    return undefined;
  }
}

/** The Pulumi CLI on PATH, found and version-checked once per PATH (one `pulumi version` per process, not per stack). */
const cliOnPath = new Map<string, Promise<PulumiCommand>>();
function pulumiCommandOnPath(): Promise<PulumiCommand> {
  const key = process.env["PATH"] ?? "";
  let command = cliOnPath.get(key);
  if (command === undefined) {
    command = PulumiCommand.get();
    cliOnPath.set(key, command);
    command.catch(() => cliOnPath.delete(key)); // a missing CLI is looked for again next time
  }
  return command;
}

/**
 * The stack whose `up`, `refresh` and `destroy` do not read its last history entry once the engine has ended
 * (`pulumi stack history --show-secrets`: one more CLI process, decrypting, for a summary a RunResult does not hold).
 */
function withoutSummaryRead(stack: Stack): Stack {
  return Object.create(stack, { info: { value: () => Promise.resolve(undefined) } }) as Stack;
}

/** A stack of the user's program (or project) against the emulator, ready to run. */
export async function createTestStack(options: TestStackOptions): Promise<TestStack> {
  if ((options.program === undefined) === (options.projectDir === undefined)) {
    throw new UserGroupsError("test_stack_failed", "createTestStack: give exactly one of program and projectDir");
  }
  const undo: Array<() => Promise<void> | void> = [];
  const cleanup = async (): Promise<void> => {
    for (const step of undo.splice(0).reverse()) {
      try {
        await step();
      } catch {
        // the rest still runs: a failing step must not leave the others' files behind
      }
    }
  };
  try {
    const emulator = typeof options.emulator === "object" ? options.emulator : await startEmulator(options.emulator === undefined ? {} : { baseUrl: options.emulator });
    if (typeof options.emulator !== "object") undo.push(() => emulator.close());
    const namespace = await emulator.namespace(options.namespace);
    undo.push(() => namespace.close());

    const { dir, workDir, backendDir, envVars: engineEnv, cleanup: removeDir } = createStackDirectory({
      ...(options.workRoot === undefined ? {} : { workRoot: options.workRoot }),
      ...(options.pulumiBinDir === undefined ? {} : { pulumiBinDir: options.pulumiBinDir }),
      ...(options.isolatedPulumiHome === undefined ? {} : { isolatedPulumiHome: options.isolatedPulumiHome }),
      ...(options.passphrase === undefined ? {} : { passphrase: options.passphrase }),
    });
    undo.push(removeDir);
    if (options.projectDir !== undefined) {
      // Entry by entry: the work root is often inside the project (the default, with projectDir the test's own directory),
      // and a directory cannot be copied into itself.
      const from = path.resolve(options.projectDir);
      const skip = (source: string): boolean => source.split(path.sep).some((part) => part === "node_modules" || part === DEFAULT_WORK_ROOT) || path.resolve(source) === dir;
      for (const entry of readdirSync(from)) {
        const source = path.join(from, entry);
        if (skip(source) || dir.startsWith(`${path.resolve(source)}${path.sep}`)) continue;
        cpSync(source, path.join(workDir, entry), { recursive: true, filter: (s) => !skip(s) });
      }
    }

    const envVars: Record<string, string> = {
      ...engineEnv,
      // On-disk TypeScript programs: type-checking is the test's typecheck's job.
      PULUMI_NODEJS_TRANSPILE_ONLY: "true",
      ...(options.credentials === "none" ? {} : { USER_GROUPS_BASE_URL: namespace.url, USER_GROUPS_API_KEY: namespace.key }),
      // The emulator has no rate limit unless asked for one: no client-side pacing either.
      USER_GROUPS_RATE_LIMIT: "off",
      ...options.envVars,
    };
    // The package's provider preload, as its own engine runs have it: the dynamic-provider host starts a third faster.
    const preload = providerPreload();
    const nodeOptions = envVars["NODE_OPTIONS"] ?? process.env["NODE_OPTIONS"] ?? "";
    if (preload !== undefined && !nodeOptions.includes(preload)) envVars["NODE_OPTIONS"] = `${nodeOptions} ${preload}`.trim();
    const stackName = options.stackName ?? "test";
    const pulumiCommand = await pulumiCommandOnPath();
    // The backend made above is empty: the stack is created at once (a select first would only fail, one CLI
    // process more). A backend of the caller's (envVars) may hold the stack already.
    const fresh = envVars["PULUMI_BACKEND_URL"] === engineEnv["PULUMI_BACKEND_URL"];
    let stack: Stack;
    if (options.program !== undefined) {
      const inline = { stackName, projectName: options.projectName ?? "user-groups-test", program: options.program };
      const settings = { workDir, envVars, pulumiCommand };
      stack = fresh ? await LocalWorkspace.createStack(inline, settings) : await LocalWorkspace.createOrSelectStack(inline, settings);
    } else {
      const onDisk = { stackName, workDir };
      stack = fresh ? await LocalWorkspace.createStack(onDisk, { envVars, pulumiCommand }) : await LocalWorkspace.createOrSelectStack(onDisk, { envVars, pulumiCommand });
    }
    const running = withoutSummaryRead(stack);
    if (options.config !== undefined && Object.keys(options.config).length > 0) await stack.setAllConfig(options.config, true);

    const secrets = [envVars["PULUMI_CONFIG_PASSPHRASE"]!, ...namespace.apiKeys.map((k) => k.key)];
    const run = async (
      step: string,
      body: (onEvent: ReturnType<typeof trackChanges>["onEvent"]) => Promise<{ stdout: string; outputs?: OutputMap }>,
    ): Promise<RunResult> => {
      const started = systemClock.now();
      const tracker = trackChanges();
      let stdout: string;
      let outputs: OutputMap | undefined;
      try {
        ({ stdout, outputs } = await body(tracker.onEvent));
      } catch (error) {
        // The engine's message, never the environment: scrubbed of the passphrase, keys and token-shaped runs.
        const message = error instanceof Error ? error.message : String(error);
        throw new UserGroupsError("test_stack_failed", `${step} failed: ${scrub(message, secrets)}`);
      }
      const requests = (await namespace.requests()).filter((entry) => Date.parse(entry.time) >= started);
      // An up's result holds the outputs; the other runs ask the stack (one more engine command).
      return { outputs: outputs ?? (await stack.outputs()), requests, changes: tracker.counts(), stdout };
    };
    let disposing: Promise<void> | undefined;
    const dispose = (): Promise<void> => (disposing ??= cleanup());
    return {
      stack,
      emulator,
      namespace,
      dir,
      workDir,
      backendDir,
      envVars,
      up: (o) => run("up", (onEvent) => running.up({ ...o, onEvent: chain(o?.onEvent, onEvent) })),
      preview: (o) => run("preview", (onEvent) => running.preview({ ...o, onEvent: chain(o?.onEvent, onEvent) })),
      refresh: (o) => run("refresh", (onEvent) => running.refresh({ ...o, onEvent: chain(o?.onEvent, onEvent) })),
      destroy: (o) => run("destroy", (onEvent) => running.destroy({ ...o, onEvent: chain(o?.onEvent, onEvent) })),
      outputs: () => stack.outputs(),
      groups: () => namespace.groups(),
      requests: (query) => namespace.requests(query),
      expectRequests: (query, count) => namespace.expectRequests(query, count),
      dispose,
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

function chain<E>(first: ((event: E) => void) | undefined, second: (event: E) => void): (event: E) => void {
  return first === undefined ? second : (event) => {
    first(event);
    second(event);
  };
}
