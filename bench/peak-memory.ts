// What the processes an operation starts cost: peak resident memory (VmHWM)
// of Pulumi's engine and dynamic-provider processes and CPU seconds of the engine, the
// dynamic provider and the program, polled from /proc while the operation runs. Only
// descendants of this process count: other people's test runs on the same
// machine start engines and dynamic providers of their own. Linux only;
// elsewhere it reports nothing.
import { readdirSync, readFileSync } from "node:fs";

const DYNAMIC_PROVIDER = /cmd[/\\]dynamic-provider/;
/** The program's Node process, which the language host starts with @pulumi/pulumi's cmd/run. */
const PROGRAM = /cmd[/\\]run/;
/** The Pulumi CLI the Automation API starts (`pulumi up ...`), which hosts the engine. */
const ENGINE = /^[^\0]*pulumi\0(up|preview|destroy|refresh)\0/;
const CLOCK_TICKS = 100; // USER_HZ on Linux

interface Stat {
  readonly ppid: number;
  /** utime + stime, seconds. */
  readonly cpuSeconds: number;
}

function statOf(pid: number): Stat | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    return Number.isFinite(ppid) ? { ppid, cpuSeconds } : undefined;
  } catch {
    return undefined;
  }
}

function descendsFrom(pid: number, ancestor: number): boolean {
  for (let current: number | undefined = pid, depth = 0; current !== undefined && current > 1 && depth < 32; depth++) {
    if (current === ancestor) return true;
    current = statOf(current)?.ppid;
  }
  return false;
}

type Role = "engine" | "provider" | "program";

interface Sample {
  readonly role: Role;
  readonly cpuSeconds: number;
  /** VmHWM, bytes. */
  readonly peakBytes: number;
}

function sample(): Map<number, Sample> {
  const found = new Map<number, Sample>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const role: Role | undefined = DYNAMIC_PROVIDER.test(cmdline)
        ? "provider"
        : ENGINE.test(cmdline)
          ? "engine"
          : PROGRAM.test(cmdline)
            ? "program"
            : undefined;
      if (role === undefined || !descendsFrom(pid, process.pid)) continue;
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      const stat = statOf(pid);
      if (hwm?.[1] !== undefined && stat) found.set(pid, { role, cpuSeconds: stat.cpuSeconds, peakBytes: Number(hwm[1]) * 1024 });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

export interface ProcessCost {
  /** Largest VmHWM of any one dynamic-provider process, bytes (undefined: none seen). */
  readonly providerPeakBytes: number | undefined;
  /** Largest VmHWM of any one engine (`pulumi` CLI) process, bytes (undefined: none seen). */
  readonly enginePeakBytes: number | undefined;
  /** How many engine and dynamic-provider processes the operation started (a sharded run may start several). */
  readonly engineProcesses: number;
  readonly providerProcesses: number;
  /** CPU seconds of the engine, dynamic-provider and program processes (last sample of each). */
  readonly engineCpuSeconds: number;
  readonly providerCpuSeconds: number;
  readonly programCpuSeconds: number;
}

export interface ProcessWatch {
  stop(): ProcessCost;
}

/** Polls every `intervalMs`; CPU used after a process's last sample is missed (at most one interval's worth). */
export function watchPulumiProcesses(intervalMs = 100): ProcessWatch {
  const last = new Map<number, Sample>();
  const poll = (): void => {
    for (const [pid, s] of sample()) last.set(pid, s);
  };
  const timer = setInterval(poll, intervalMs);
  poll();
  return {
    stop: () => {
      clearInterval(timer);
      poll();
      const all = [...last.values()];
      const providers = all.filter((s) => s.role === "provider");
      const engines = all.filter((s) => s.role === "engine");
      const peak = (of: readonly Sample[]): number | undefined => (of.length > 0 ? Math.max(...of.map((s) => s.peakBytes)) : undefined);
      const sum = (role: Role): number => all.filter((s) => s.role === role).reduce((total, s) => total + s.cpuSeconds, 0);
      return {
        providerPeakBytes: peak(providers),
        enginePeakBytes: peak(engines),
        engineProcesses: engines.length,
        providerProcesses: providers.length,
        engineCpuSeconds: sum("engine"),
        providerCpuSeconds: sum("provider"),
        programCpuSeconds: sum("program"),
      };
    },
  };
}
