// A replica of a sign-up service for the fault histories: testkit/jepsen/replica-worker.cjs
// as its own OS process and process group (a pod), driven over stdio. Every
// call goes through the HistoryRecorder (invoke, then ok / fail / info).
import { type ChildProcess, spawn } from "node:child_process";
import readline from "node:readline";
import type { HistoryRecorder, Op, OpError, OpKind, OpValue } from "./history";
import { commandLine, descendantsOf, isRunning } from "../kill-tree";

export interface ReplicaJob {
  readonly stack: string;
  /** The backend this replica names (for a partition: the proxy's address). */
  readonly backendUrl: string;
  readonly workDir: string;
  readonly shardSize?: number;
  readonly lockTimeoutMs?: number;
}

interface Answer {
  readonly op: number;
  readonly ok: boolean;
  readonly value?: OpValue;
  readonly error?: OpError & { causes?: string[] };
}

export class Replica {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { op: Op; resolve: (op: Op) => void }>();
  private readonly ready: Promise<void>;
  private stderr = "";
  private exited = false;
  private readonly exit: Promise<void>;
  /** Pids this replica stopped (SIGSTOP), to continue them. */
  private stopped: number[] = [];

  constructor(
    readonly name: string,
    private readonly recorder: HistoryRecorder,
    worker: string,
    job: ReplicaJob,
    env: Record<string, string>,
    /**
     * Run "on another host": in a UTS namespace of its own (Linux `unshare`)
     * with this host name, so that its engine's locks and its lease carry a
     * host whose pids the other replicas cannot check (the pids stay visible:
     * only the name decides, as it does between hosts).
     */
    host?: string,
  ) {
    const [command, args] =
      host === undefined
        ? [process.execPath, [worker]]
        : ["unshare", ["--user", "--map-root-user", "--uts", "sh", "-c", 'hostname "$1" && exec "$2" "$3"', "sh", host, process.execPath, worker]];
    this.child = spawn(command, args, {
      env: { ...process.env, ...env, JEPSEN_REPLICA: JSON.stringify(job) },
      detached: true, // its own process group: a pod
      stdio: ["pipe", "pipe", "pipe"],
    });
    // A call written to a replica killed a moment ago (its exit not yet seen) meets a closed pipe: EPIPE. That call is
    // settled as indeterminate ("info") when the exit is seen, like every call it never answered; the error itself is not news.
    this.child.stdin!.on("error", () => undefined);
    this.child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-20_000);
    });
    this.exit = new Promise((resolve) => this.child.on("exit", () => {
      this.exited = true;
      resolve();
    }));
    this.ready = new Promise((resolve, reject) => {
      const lines = readline.createInterface({ input: this.child.stdout! });
      lines.on("line", (line) => {
        let answer: Answer & { ready?: boolean };
        try {
          answer = JSON.parse(line) as Answer & { ready?: boolean };
        } catch {
          return; // not ours (a library's stray line)
        }
        if (answer.ready) return resolve();
        const waiting = this.pending.get(answer.op);
        if (!waiting) return;
        this.pending.delete(answer.op);
        if (answer.ok) this.recorder.complete(waiting.op, "ok", { value: answer.value ?? {} });
        else this.recorder.complete(waiting.op, "fail", { error: answer.error ?? { message: "no error" } });
        waiting.resolve(waiting.op);
      });
      void this.exit.then(() => {
        reject(new Error(`replica ${name} exited: ${this.stderr.slice(-2000)}`));
        // Calls it never answered: indeterminate.
        for (const [, waiting] of this.pending) {
          this.recorder.complete(waiting.op, "info");
          waiting.resolve(waiting.op);
        }
        this.pending.clear();
      });
    });
    this.ready.catch(() => undefined);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return !this.exited;
  }

  whenReady(): Promise<void> {
    return this.ready;
  }

  /** Sends one call; resolves with its op once answered (or marked info when the replica died). */
  call(f: OpKind, id?: string, extra: { retryOf?: number; duringFault?: string } = {}): Promise<Op> {
    const op = this.recorder.invoke(this.name, f, id, extra);
    if (this.exited) {
      this.recorder.complete(op, "info");
      return Promise.resolve(op);
    }
    return new Promise((resolve) => {
      this.pending.set(op.index, { op, resolve });
      this.child.stdin!.write(`${JSON.stringify({ op: op.index, f, ...(id !== undefined ? { id } : {}) })}\n`);
    });
  }

  /** Calls not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Every process of this replica: its process group's and everything under it (the dynamic provider runs in a group of its own). */
  private processes(): number[] {
    return [this.pid, ...descendantsOf(this.pid)].filter(isRunning);
  }

  /**
   * SIGSTOP, as a frozen VM or a long GC pause: "group" stops every process of
   * the replica (its group, then the engine's and provider's), "node" only the
   * service's own Node process (its lease renewal stops; its engine runs on).
   */
  pause(scope: "group" | "node" | "engine" = "group"): number[] {
    let pids: number[];
    if (scope === "node") pids = [this.pid];
    else if (scope === "engine") pids = descendantsOf(this.pid).filter((pid) => /(^|\/)pulumi /.test(`${commandLine(pid)} `) && isRunning(pid));
    else {
      process.kill(-this.pid, "SIGSTOP");
      pids = this.processes();
    }
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGSTOP");
      } catch {
        // exited meanwhile
      }
    }
    this.stopped.push(...pids);
    return pids;
  }

  resume(): void {
    try {
      process.kill(-this.pid, "SIGCONT");
    } catch {
      // gone
    }
    for (const pid of this.stopped) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone
      }
    }
    this.stopped = [];
  }

  /** Asks the fleet to drain and exit; kills it after `timeoutMs`. */
  async close(timeoutMs = 60_000): Promise<void> {
    if (this.exited) return;
    this.resume();
    this.child.stdin!.write(`${JSON.stringify({ close: true })}\n`);
    const timer = setTimeout(() => this.kill(), timeoutMs);
    await this.exit;
    clearTimeout(timer);
  }

  /** SIGKILL of the process group and of everything under it (continued first, so that nothing stays stopped). */
  kill(): void {
    const pids = this.processes();
    for (const pid of [...pids, ...this.stopped]) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      // gone
    }
    this.resume();
  }

  /** Marks every unanswered call info (the history is cut here), without waiting for the replica. */
  cut(): void {
    for (const [, waiting] of this.pending) {
      this.recorder.complete(waiting.op, "info");
      waiting.resolve(waiting.op);
    }
    this.pending.clear();
  }

  get log(): string {
    return this.stderr;
  }

  waitExit(): Promise<void> {
    return this.exit;
  }
}
