// A dynamic-provider process must not outlive its engine. Pulumi starts it in a
// process group of its own (through a /bin/sh wrapper), so a SIGKILL of the
// run's group (a killed replica, a lost CI runner's job) leaves it running,
// able to finish requests behind a takeover's back. Each second it checks that
// its engine is still there: its parent did not change (reparented: the
// engine that started it directly is gone), and the engine's gRPC address
// (its command-line argument) still accepts connections. Two refusals in a row
// and it exits. Its ticks are the clock's sleeps that keep no process alive: it
// never keeps a finished process running.
import { connect } from "node:net";
import { type Clock, systemClock } from "../clock";

export interface EngineAddress {
  readonly host: string;
  readonly port: number;
}

/** The engine's address among the dynamic provider's arguments (`node .../dynamic-provider/index.js 127.0.0.1:PORT`). */
export function engineAddressOf(argv: readonly string[]): EngineAddress | undefined {
  for (const arg of argv.slice(2)) {
    const match = /^(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})$/.exec(arg);
    if (match) return { host: match[1]!.replace(/^\[|\]$/g, ""), port: Number(match[2]) };
  }
  return undefined;
}

/** Is this process Pulumi's Node.js dynamic-provider plugin? */
export function isDynamicProviderProcess(argv: readonly string[]): boolean {
  return /[\\/]cmd[\\/]dynamic-provider([\\/]index\.js)?$/.test(argv[1] ?? "");
}

export type ProbeResult = "up" | "down" | "unknown";

/** One TCP connection attempt: refused means nobody listens there any more; anything else proves nothing. */
export function probeAddress(address: EngineAddress, timeoutMs = 1_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port });
    const done = (result: ProbeResult) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done("unknown"));
    socket.once("connect", () => done("up"));
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code === "ECONNREFUSED" ? "down" : "unknown"));
  });
}

export interface WatchdogOptions {
  readonly address: EngineAddress | undefined;
  readonly everyMs?: number;
  readonly ppid?: () => number;
  readonly probe?: (address: EngineAddress) => Promise<ProbeResult>;
  /** Called once, with why; the default writes a line and exits. */
  readonly onEngineGone?: (why: string) => void;
  /** The ticks' clock (default systemClock). */
  readonly clock?: Clock;
}

/** Starts the watch; returns its stop function. */
export function startEngineWatchdog(options: WatchdogOptions): () => void {
  const ppid = options.ppid ?? (() => process.ppid);
  const probe = options.probe ?? probeAddress;
  const gone =
    options.onEngineGone ??
    ((why: string) => {
      process.stderr.write(`pulumi-user-groups provider: ${why}; exiting so that nothing more is sent for a run that is over\n`);
      process.exit(1);
    });
  const clock = options.clock ?? systemClock;
  const everyMs = options.everyMs ?? 1_000;
  const parent = ppid();
  const stopping = new AbortController();
  const stop = () => stopping.abort();
  const goneOnce = (why: string) => {
    stop();
    gone(why);
  };
  void (async () => {
    let refusals = 0;
    // One check a tick, the next tick counted from the end of the last check's probe.
    while (!stopping.signal.aborted) {
      try {
        await clock.sleep(everyMs, stopping.signal, { keepAlive: false });
      } catch {
        return; // stopped
      }
      if (stopping.signal.aborted) return;
      if (ppid() !== parent) return goneOnce(`the engine that started this process (pid ${parent}) is gone`);
      if (options.address === undefined) continue;
      const result = await probe(options.address).catch((): ProbeResult => "unknown");
      refusals = result === "down" ? refusals + 1 : 0;
      if (refusals >= 2 && !stopping.signal.aborted) return goneOnce(`the engine at ${options.address.host}:${options.address.port} no longer answers`);
    }
  })();
  return stop;
}

let started = false;

/** In Pulumi's dynamic-provider process (only there), watches the engine; once per process. */
export function watchEngineOfThisProcess(): void {
  if (started || !isDynamicProviderProcess(process.argv)) return;
  started = true;
  startEngineWatchdog({ address: engineAddressOf(process.argv) });
}
