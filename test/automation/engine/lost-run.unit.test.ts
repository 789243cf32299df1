// A run that lost its lease is stopped 2 s later (docs/fleet-replicas.md, "Fencing":
// "once its lease is lost, the run is interrupted and, 2 s later, what is left of
// it on its host is killed"): provider/automation/engine/takeover.ts, stopLostRun,
// on a clock the test holds. The run's leftovers are played by a child process
// carrying the run's id, as its engine and providers do; another run's is spared.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { LOST_RUN_GRACE_MS, stopLostRun } from "../../../provider/automation/engine/takeover";
import { RUN_ID_ENV } from "../../../provider/automation/lease/run-lease";
import { clockWith } from "../../../provider/clock";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** A process of run `runId` that runs until killed; resolves once it is up. */
async function leftoverOf(runId: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", "process.stdout.write('up'); setInterval(() => {}, 1000)"], {
    env: { ...process.env, [RUN_ID_ENV]: runId },
    stdio: ["ignore", "pipe", "ignore"],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("error", reject);
  });
  return child;
}

const exited = (child: ChildProcess) =>
  new Promise<NodeJS.Signals | null>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(child.signalCode) : child.once("exit", (_code, signal) => resolve(signal))));

describe.skipIf(process.platform !== "linux")("a run that lost its lease", () => {
  it("is killed 2 s (on the clock) after the loss, not before; another run's processes are left alone", async () => {
    expect(LOST_RUN_GRACE_MS).toBe(2_000);
    const lost = await leftoverOf("lost-run-0001");
    const other = await leftoverOf("other-run-0002");
    let wake!: () => void;
    const slept: number[] = [];
    const clock = clockWith({ sleep: (ms) => (slept.push(ms), new Promise<void>((resolve) => (wake = resolve))) });
    const stopping = stopLostRun("lost-run-0001", clock);
    await new Promise((resolve) => setImmediate(resolve));
    // The grace period asked of the clock, and nothing killed while it runs.
    expect(slept).toEqual([2_000]);
    expect(lost.exitCode === null && lost.signalCode === null).toBe(true);
    wake();
    expect(await stopping).toEqual([lost.pid]);
    expect(await exited(lost)).toBe("SIGKILL");
    expect(other.exitCode === null && other.signalCode === null).toBe(true);
  });
});
