// The Pulumi CLI, found and version-checked once per process and PATH rather
// than once per workspace: a sharded run opens a workspace per shard, and each
// would otherwise start the CLI once more only to read its version; across
// processes the version is remembered per binary (known-version.ts). Each engine
// run through it is given the trace options of the moment (engine-trace.ts).
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { ENGINE_COMMANDS, engineTraceDestination, engineTraceOptions, mergedNodeOptions, preloadNodeOption } from "./engine-trace";
import { otlpMetricsRequested } from "../../../otel-env";
import { binaryKey, pulumiOnPath, rememberedVersion, rememberVersion, sdkSemver } from "./known-version";

const SKIP_VERSION_CHECK = "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK";
const found = new Map<string, Promise<PulumiCommand>>();

/** PulumiCommand's `run` (marked internal in its declarations): what every workspace and stack command goes through. */
type Run = (args: string[], cwd: string, additionalEnv: Record<string, string>, ...rest: unknown[]) => Promise<unknown>;

/**
 * The command, with each engine run (up, preview, refresh, destroy, import)
 * given engineTraceOptions in the context active when it starts: TRACEPARENT of
 * the caller's span, and with a destination (engineTraceDestination of the
 * run's environment over this process's) `--otel-traces` and the preload in
 * NODE_OPTIONS; the preload also when that environment's OTEL_* ask for OTLP
 * metrics (the provider processes export the HTTP client's metrics there).
 * The preload goes into every engine run's NODE_OPTIONS, traced or not: in the
 * dynamic-provider host it defers the modules a provider never uses
 * (lean-provider-host.ts), a third of the host's start. Other commands go as they were.
 */
export function withEngineTrace(command: PulumiCommand): PulumiCommand {
  const run = (command as unknown as { run: Run }).run;
  if (typeof run !== "function") return command;
  const traced = Object.create(command) as PulumiCommand & { run: Run };
  traced.run = function (args, cwd, additionalEnv, ...rest) {
    if (!ENGINE_COMMANDS.has(args[0] ?? "")) return run.call(command, args, cwd, additionalEnv, ...rest);
    const env = { ...process.env, ...additionalEnv };
    // The engine passes its environment (OTEL_* included) to the providers it starts: with metrics asked for, the preload exports the HTTP client's.
    const options = engineTraceOptions(engineTraceDestination(env), otlpMetricsRequested(env));
    const runEnv: Record<string, string> = { ...additionalEnv, ...options.envVars };
    const nodeOptions = mergedNodeOptions(env.NODE_OPTIONS, options.envVars.NODE_OPTIONS ?? providerPreloadOption());
    if (nodeOptions !== undefined) runEnv.NODE_OPTIONS = nodeOptions;
    return run.call(command, [...args, ...options.args], cwd, runEnv, ...rest);
  };
  return traced;
}

/** The preload's NODE_OPTIONS, or none where the package cannot resolve its own entry (the run goes on without it). */
function providerPreloadOption(): string | undefined {
  try {
    return preloadNodeOption();
  } catch {
    return undefined;
  }
}

/** The `pulumi` on this process's PATH, as LocalWorkspace would find it (`envVars` may skip the version check, as there). */
export function pulumiCommandOnPath(envVars: Readonly<Record<string, string>> = {}): Promise<PulumiCommand> {
  const skipVersionCheck = Boolean(envVars[SKIP_VERSION_CHECK] || process.env[SKIP_VERSION_CHECK]);
  const key = `${skipVersionCheck}\u0000${process.env.PATH ?? ""}`;
  let command = found.get(key);
  if (command === undefined) {
    command = knownCommand(skipVersionCheck).then(withEngineTrace);
    found.set(key, command);
    // A missing CLI is asked for again next time (it may have been installed since).
    command.catch(() => {
      if (found.get(key) === command) found.delete(key);
    });
  }
  return command;
}

/**
 * PulumiCommand.get, without starting `pulumi version` when the binary PATH
 * names was asked before (known-version.ts); a version is remembered only once
 * the SDK's own check of it passed.
 */
export async function knownCommand(skipVersionCheck: boolean): Promise<PulumiCommand> {
  const binary = pulumiOnPath();
  const key = binary === undefined ? undefined : binaryKey(binary);
  const remembered = key === undefined ? undefined : rememberedVersion(key);
  const version = remembered === undefined ? undefined : sdkSemver(remembered);
  // What PulumiCommand.get returns: the command as spawned ("pulumi", found on PATH) and its version.
  if (version) return new (PulumiCommand as unknown as new (command: string, version: unknown) => PulumiCommand)("pulumi", version);
  const command = await PulumiCommand.get({ skipVersionCheck });
  if (key !== undefined && !skipVersionCheck && command.version) rememberVersion(key, command.version.toString());
  return command;
}
