// Finding and killing the `pulumi` CLI that the Automation API spawned, with
// every process under it. A kill -9 of the CLI alone leaves its plugins (the
// dynamic provider: a /bin/sh wrapper and its node process) running, orphaned,
// with requests still in flight; a crashed machine or CI runner would take
// them too, so the trials kill the whole tree. Linux only (/proc).
import { readdirSync, readFileSync } from "node:fs";

/** pid -> parent pid of every process, from /proc/<pid>/stat. */
function parentsOf(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while we looked
    }
  }
  return parents;
}

export function descendantsOf(pid: number): number[] {
  const parents = parentsOf();
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
  } catch {
    return "";
  }
}

/** Alive and not a zombie (a zombie has exited; it only waits to be reaped). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The `pulumi up` of this stack that this process started, if it is running. */
export function findPulumiUp(stack: string): number | undefined {
  return findPulumiUps(stack)[0];
}

/** Every `pulumi up` of this process's of the stack or of one of its shards (`<stack>.shard-<n>`). */
export function findPulumiUps(stack: string, command: "up" | "destroy" = "up"): number[] {
  return descendantsOf(process.pid).filter((pid) => {
    const args = commandLine(pid).split(" ");
    const target = args[args.indexOf("--stack") + 1] ?? "";
    return /(^|\/)pulumi$/.test(args[0] ?? "") && args[1] === command && (target === stack || /^\.shard-\d+$/.test(target.slice(stack.length)) && target.startsWith(stack));
  });
}

/**
 * SIGKILLs the CLI first (so it cannot react to its plugins dying and write
 * anything), then everything that was under it. Returns every killed pid.
 */
export function killTree(cli: number): number[] {
  const below = descendantsOf(cli);
  process.kill(cli, "SIGKILL");
  for (const pid of below) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return [cli, ...below];
}
