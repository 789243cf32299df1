// One operation of the scale bench timed (bench/scale.ts, bench/shard-profile.ts): its
// seconds, and the CPU and peak memory of the processes it started (bench/peak-memory.ts),
// of this process (inline programs, the library, the emulator's thread) and of the
// other children it waited for (the CLI calls beside the engine's).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { type ProcessCost, watchPulumiProcesses } from "./peak-memory.js";

export interface TimedOperation {
  readonly seconds: number;
  /** Largest VmHWM of any one engine / dynamic-provider process during the operation, bytes. */
  readonly enginePeakBytes?: number;
  readonly providerPeakBytes?: number;
  /** How many engine and provider processes it started (more than one: a sharded run). */
  readonly engineProcesses: number;
  readonly providerProcesses: number;
  readonly engineCpuSeconds: number;
  readonly providerCpuSeconds: number;
  /** CPU seconds of this process (the inline programs, the automation library, the emulator's thread) and of every other child (CLI calls but the engine's: stack select, export). */
  readonly hostCpuSeconds?: number;
  readonly otherChildCpuSeconds?: number;
}

/** CPU seconds of this process's reaped children (Linux: /proc/self/stat's cutime + cstime; 0 elsewhere). */
function childrenCpuSeconds(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

function costOf(cost: ProcessCost): Omit<TimedOperation, "seconds"> {
  return {
    ...(cost.enginePeakBytes !== undefined ? { enginePeakBytes: cost.enginePeakBytes } : {}),
    ...(cost.providerPeakBytes !== undefined ? { providerPeakBytes: cost.providerPeakBytes } : {}),
    engineProcesses: cost.engineProcesses,
    providerProcesses: cost.providerProcesses,
    engineCpuSeconds: cost.engineCpuSeconds,
    providerCpuSeconds: cost.providerCpuSeconds,
  };
}

const secondsSince = (startMs: number): number => (performance.now() - startMs) / 1000;

/** Runs `operation`, timing it and watching the processes it starts; `check` says what was wrong with its outcome. */
export async function timed<T>(operation: () => Promise<T>, check: (result: T) => string | undefined): Promise<TimedOperation> {
  const watch = watchPulumiProcesses();
  const start = performance.now();
  const hostBefore = process.cpuUsage();
  const childrenBefore = childrenCpuSeconds();
  let result: T;
  try {
    result = await operation();
  } catch (error) {
    watch.stop();
    throw error;
  }
  const seconds = secondsSince(start);
  const cost = watch.stop();
  const host = process.cpuUsage(hostBefore);
  const hostCpuSeconds = (host.user + host.system) / 1e6;
  // Reaped children (every process this run started and waited for), less the engines the watch counted.
  const otherChildCpuSeconds = Math.max(0, childrenCpuSeconds() - childrenBefore - cost.engineCpuSeconds - cost.providerCpuSeconds);
  const problem = check(result);
  if (problem !== undefined) throw new Error(problem);
  return { seconds, ...costOf(cost), hostCpuSeconds, otherChildCpuSeconds };
}
