// npm run bench:profile -- [--n 1000] [--kinds ours,floor-shaped] [--shard-size 250] [--parallel 8] [--concurrency 2] [--skip-checkpoints] [--reps 1]
// Where a whole-set run's time goes (docs/performance.md, "A profile of one
// shard run"): ours at N with the knobs the profile turns (shard size, the
// engine's parallelism, shards at once, Pulumi's checkpoint per step) against
// the shaped floor in the same run; seconds of each operation and the CPU
// seconds of the engine, dynamic-provider and program processes it started.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { floorAt, oursAt, SCALE_OPERATIONS, type CliRun, type ScaleKind } from "./scale.js";
import { startServerThread } from "./fake-server.js";
import type { FloorKind } from "./inline-floors.js";

const REPO_ROOT = path.resolve(__dirname, "../..");

function valueOf(argv: readonly string[], flag: string): string | undefined {
  const at = argv.indexOf(flag);
  return at >= 0 ? argv[at + 1] : undefined;
}

function line(run: CliRun, label: string): string {
  return SCALE_OPERATIONS.map((op) => {
    const o = run.operations[op];
    return `${label} ${op.padEnd(17)} ${o.seconds.toFixed(1).padStart(6)} s  cpu engine ${o.engineCpuSeconds.toFixed(1).padStart(5)} provider ${o.providerCpuSeconds.toFixed(1).padStart(5)}  processes ${o.engineProcesses}/${o.providerProcesses}  host ${(o.hostCpuSeconds ?? 0).toFixed(1)} other ${(o.otherChildCpuSeconds ?? 0).toFixed(1)}`;
  }).join("\n");
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  process.env.USER_GROUPS_RATE_LIMIT ??= "off";
  const n = Number(valueOf(argv, "--n") ?? 1000);
  const kinds = (valueOf(argv, "--kinds") ?? "ours,floor-shaped").split(",") as ScaleKind[];
  const reps = Number(valueOf(argv, "--reps") ?? 1);
  const shardSize = valueOf(argv, "--shard-size");
  const parallel = valueOf(argv, "--parallel");
  const concurrency = valueOf(argv, "--concurrency");
  if (concurrency !== undefined) process.env.USER_GROUPS_SHARD_CONCURRENCY = concurrency;
  const skip = argv.includes("--skip-checkpoints");
  const server = await startServerThread("fake");
  const workRoot = path.join(REPO_ROOT, ".work", "bench-profile");
  mkdirSync(workRoot, { recursive: true });
  const root = mkdtempSync(path.join(workRoot, "profile-"));
  console.log(`N=${n} shardSize=${shardSize ?? "default"} parallel=${parallel ?? "default"} concurrency=${concurrency ?? "default"} skipCheckpoints=${skip} load ${os.loadavg()[0]!.toFixed(2)}`);
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const kind of rep % 2 === 0 ? kinds : [...kinds].reverse()) {
        const run =
          kind === "ours"
            ? await oursAt(n, server, root, {
                ...(shardSize !== undefined ? { shardSize: Number(shardSize) } : {}),
                ...(parallel !== undefined ? { parallel: Number(parallel) } : {}),
                ...(skip ? { envVars: { PULUMI_SKIP_CHECKPOINTS: "true" } } : {}),
                withoutEnginePreview: true,
              })
            : await floorAt(kind as FloorKind, n, false, server, root);
        console.log(line(run, `${kind.padEnd(12)} #${rep + 1}`));
      }
      console.log(`load ${os.loadavg()[0]!.toFixed(2)}`);
    }
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
