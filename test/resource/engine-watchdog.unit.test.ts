// The dynamic provider's engine watchdog (provider/resource/engine-watchdog.ts) on a
// clock the test steps: each tick is one of the clock's sleeps, asked with
// keepAlive: false (it must never hold a finished provider process up), and the
// test lets it end when it chooses, so every check runs in a known order.
import { describe, expect, it, vi } from "vitest";
import type { Clock, SleepOptions } from "../../provider/clock";
import { type ProbeResult, startEngineWatchdog } from "../../provider/resource/engine-watchdog";

interface Tick {
  readonly ms: number;
  readonly options: SleepOptions | undefined;
  readonly signal: AbortSignal | undefined;
  readonly end: () => void;
}

/** A clock whose sleeps end only when the test says so. */
function steppedClock(): { clock: Clock; ticks: Tick[]; tick: () => Promise<void> } {
  const ticks: Tick[] = [];
  const clock: Clock = {
    now: () => 0,
    random: () => 0,
    sleep: (ms, signal, options) =>
      new Promise<void>((resolve, reject) => {
        ticks.push({ ms, options, signal, end: resolve });
        signal?.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
      }),
  };
  // Ends the pending sleep, then waits for the watchdog to ask for its next one (or to stop).
  const tick = async () => {
    const pending = ticks.at(-1)!;
    const asked = ticks.length;
    pending.end();
    await vi.waitFor(() => expect(ticks.length > asked || pending.signal?.aborted).toBe(true));
  };
  return { clock, ticks, tick };
}

describe("the provider's engine watchdog on the clock", () => {
  it("ticks through the clock, every everyMs, without keeping the process alive", async () => {
    const { clock, ticks, tick } = steppedClock();
    const stop = startEngineWatchdog({ address: { host: "127.0.0.1", port: 1 }, everyMs: 750, ppid: () => 10, probe: async () => "up", clock, onEngineGone: () => {} });
    await tick();
    await tick();
    expect(ticks.map((t) => [t.ms, t.options])).toEqual([
      [750, { keepAlive: false }],
      [750, { keepAlive: false }],
      [750, { keepAlive: false }],
    ]);
    stop();
    expect(ticks.at(-1)!.signal?.aborted).toBe(true);
  });

  it("gives up after two refusals in a row, not before; an answer in between resets the count", async () => {
    const { clock, tick } = steppedClock();
    const answers: ProbeResult[] = ["down", "up", "down", "unknown", "down", "down", "up"];
    const gone: string[] = [];
    startEngineWatchdog({ address: { host: "127.0.0.1", port: 1 }, ppid: () => 10, probe: async () => answers.shift()!, clock, onEngineGone: (why) => gone.push(why) });
    for (let i = 0; i < 5; i++) await tick();
    expect(gone).toEqual([]);
    await tick(); // the second "down" in a row
    expect(gone).toEqual(["the engine at 127.0.0.1:1 no longer answers"]);
    expect(answers).toEqual(["up"]); // no probe after it gave up
  });

  it("gives up at once, without probing, when this process was reparented; stop() ends the ticks", async () => {
    const { clock, ticks, tick } = steppedClock();
    let parent = 10;
    const probe = vi.fn(async (): Promise<ProbeResult> => "up");
    const gone: string[] = [];
    startEngineWatchdog({ address: { host: "127.0.0.1", port: 1 }, ppid: () => parent, probe, clock, onEngineGone: (why) => gone.push(why) });
    await tick();
    expect(probe).toHaveBeenCalledTimes(1);
    parent = 1;
    await tick();
    expect(gone).toEqual(["the engine that started this process (pid 10) is gone"]);
    expect(probe).toHaveBeenCalledTimes(1);
    expect(ticks).toHaveLength(2); // no tick after it gave up

    const stepped = steppedClock();
    const quiet = vi.fn(async (): Promise<ProbeResult> => "down");
    const stop = startEngineWatchdog({ address: { host: "127.0.0.1", port: 1 }, ppid: () => 10, probe: quiet, clock: stepped.clock, onEngineGone: (why) => gone.push(why) });
    stop();
    stepped.ticks[0]!.end(); // too late: the sleep was aborted
    await new Promise((resolve) => setImmediate(resolve));
    expect(quiet).not.toHaveBeenCalled();
    expect(stepped.ticks).toHaveLength(1);
  });
});
