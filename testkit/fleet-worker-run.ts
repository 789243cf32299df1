// Runs testkit/fleet-worker.cjs (one replica of a service, as its own OS
// process) on one job and returns its report. Shared by the fleet-processes test
// and bench/fleet.ts; the .cjs is not compiled into build/, so callers pass its path.
import { execFile } from "node:child_process";

/** What the worker reads from FLEET_WORKER_JOB. */
export interface FleetWorkerJob {
  stack: string;
  backendUrl: string;
  workDir: string;
  /** The group ids to ensure, all at once; each is named `${prefix} ${id}`. */
  ids: readonly string[];
  prefix: string;
}

/** The worker's one JSON line: each id's outcome, in the job's order. */
export interface FleetWorkerReport {
  engineRuns: number;
  report: { id: string; change?: string; token?: string; error?: string; code?: string }[];
}

export function runFleetWorker(worker: string, job: FleetWorkerJob, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<FleetWorkerReport> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [worker],
      { env: { ...env, FLEET_WORKER_JOB: JSON.stringify(job) }, timeout: timeoutMs, maxBuffer: 1 << 22 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`fleet worker ${job.prefix} failed: ${stderr}`));
        else resolve(JSON.parse(stdout) as FleetWorkerReport);
      },
    );
  });
}
