// The closed-loop load driver shared by the benchmarks: `inFlight` loops, each
// sending its next request as soon as the previous one is answered, for a
// fixed time; latency of every request, errors counted.
import { performance } from "node:perf_hooks";
import { percentile } from "./stats.js";

/** Sends one request; resolves true when the answer was the expected one. */
export type OneRequest = () => Promise<boolean>;

export interface LoadRun {
  readonly requests: number;
  readonly errors: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
}

export async function closedLoop(send: OneRequest, inFlight: number, seconds: number): Promise<LoadRun> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        if (!(await send())) errors += 1;
      } catch {
        errors += 1;
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, seconds: elapsed, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}
