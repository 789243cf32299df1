// `pulumi preview`, `up` and `destroy` of N UserGroups (against the fake server)
// next to the same operations on N no-op dynamic resources: a
// pulumi.dynamic.Resource whose provider answers at once, so its times are
// what the engine, the file backend, the program and the dynamic-provider
// process cost by themselves (the floor). Each kind is a program on disk that
// the engine runs as `pulumi up` runs it, driven through the Automation API on
// the same machine, one kind right after the other for each N.
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { USER_GROUP_TYPE } from "../provider/resource/user-group.js";
import { KEY, type ServerThread, startServerThread } from "./fake-server.js";
import { FLOOR_TYPE } from "./inline-floors.js";
import { watchPulumiProcesses } from "./peak-memory.js";
import { median } from "./stats.js";

/**
 * ours: N UserGroups. floor: N no-op dynamic resources with the same inputs.
 * floor-shaped: no-op dynamic resources of a UserGroup's shape: the same
 * inputs, the same output properties (token, teamId, providedId,
 * apiEnvironmentTag), and the token declared secret (additionalSecretOutputs).
 * Pulumi's own cost grows with both: its SDK creates four promises per output
 * property, each capturing a stack trace, and the engine re-serializes every
 * secret at every checkpoint. The shaped floor is that cost with no work of ours.
 */
export type Kind = "ours" | "floor" | "floor-shaped";
export const KINDS: readonly Kind[] = ["floor", "floor-shaped", "ours"];
export type Operation = "preview" | "up" | "preview-unchanged" | "destroy";
export const OPERATIONS: readonly Operation[] = ["preview", "up", "preview-unchanged", "destroy"];

export interface EngineRun {
  readonly kind: Kind;
  readonly n: number;
  /** Wall time (the median over the repetitions) of each operation, seconds (Automation API call: CLI start to exit). */
  readonly seconds: Record<Operation, number>;
  /** Fastest and slowest run of each operation that ran more than once, seconds. */
  readonly secondsRange?: Partial<Record<Operation, readonly [number, number]>>;
  /** How many repetitions (fresh stacks) the figures summarize. */
  readonly repetitions?: number;
  /** Every timed run of each operation, seconds (previews may run several times per stack, see previewRepeats). */
  readonly samples?: Record<Operation, readonly number[]>;
  /** JSON bytes of the resources of the measured type in the stored state, divided by N. */
  readonly stateBytesPerResource: number;
  /** Largest VmHWM of the dynamic-provider process during `up`, bytes. */
  readonly providerPeakBytes: number | undefined;
  /**
   * CPU seconds per operation of the engine (the `pulumi` CLI process), the
   * dynamic-provider process and the program's Node process: where the wall
   * time went.
   */
  readonly cpuSeconds: Record<Operation, { engine: number; provider: number; program: number }>;
  /** Requests the API received per resource and operation, by method (ours only). */
  readonly requestsPerResource?: Record<Operation, Record<string, number>>;
}

const PROJECT = "bench";
const STACK = "bench";

/**
 * The program of each kind, as a user would write it: a CommonJS file that the
 * engine runs in a fresh Node process for every preview and up (so loading
 * @pulumi/pulumi, and our package for ours, is part of each operation, as in
 * `pulumi up`). The no-op providers capture nothing, so Pulumi serializes them
 * small (but still twice per resource). The shaped floor's token is 64
 * characters and different per resource, as a real token is.
 */
export function programSource(kind: Kind, n: number, prefix: string): string {
  const declare =
    kind === "ours"
      ? `const { UserGroup } = require("pulumi-user-groups");
const declare = (name, args) => new UserGroup(name, args);`
      : kind === "floor"
        ? `const pulumi = require("@pulumi/pulumi");
const provider = { async create(inputs) { return { id: inputs.userGroupId, outs: inputs }; } };
const declare = (name, args) => new pulumi.dynamic.Resource(provider, name, args);`
        : `const pulumi = require("@pulumi/pulumi");
const provider = { async create(i) { return { id: i.userGroupId, outs: { ...i, token: i.userGroupId.padStart(64, "0"), teamId: 1, providedId: i.userGroupId, apiEnvironmentTag: "Customer" } }; } };
const outputs = { token: undefined, teamId: undefined, providedId: undefined, apiEnvironmentTag: undefined };
const declare = (name, args) => new pulumi.dynamic.Resource(provider, name, { ...args, ...outputs }, { additionalSecretOutputs: ["token"] });`;
  return `// ${kind}: ${n} resources (written by bench/engine-vs-floor.ts)
${declare}
for (let i = 0; i < ${n}; i++) {
  declare(\`g\${i}\`, { name: \`Bench group \${i}\`, userGroupId: \`${prefix}-\${i}\`, mapping: { sales: "warehouse-eu" } });
}
`;
}

async function adminRequests(server: ServerThread, method: "GET" | "DELETE"): Promise<Array<{ method: string; path: string }>> {
  const res = await fetch(`${server.url}/__admin/requests`, { method });
  const body = (await res.json()) as { requests?: Array<{ method: string; path: string }> };
  return body.requests ?? [];
}

/** Requests to /api/user since the last call, per resource, by method; clears the journal. */
async function takeRequestCounts(server: ServerThread, n: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const entry of await adminRequests(server, "GET")) {
    if (!entry.path.startsWith("/api/user")) continue;
    counts[entry.method] = (counts[entry.method] ?? 0) + 1 / n;
  }
  await adminRequests(server, "DELETE");
  return counts;
}

function stateBytesPerResource(backendDir: string, type: string, n: number): number {
  const file = path.join(backendDir, ".pulumi", "stacks", PROJECT, `${STACK}.json`);
  const state = JSON.parse(readFileSync(file, "utf8")) as { checkpoint?: { latest?: { resources?: Array<{ type: string }> } } };
  const resources = (state.checkpoint?.latest?.resources ?? []).filter((r) => r.type === type);
  if (resources.length !== n) throw new Error(`expected ${n} resources of type ${type} in the state, found ${resources.length}`);
  return resources.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r)), 0) / n;
}

export interface EngineBenchOptions {
  readonly workRoot: string;
  readonly server: ServerThread;
  /** Log lines (progress). */
  readonly log: (line: string) => void;
  /** More environment for the engine, e.g. PULUMI_SKIP_CHECKPOINTS=true. */
  readonly env?: Record<string, string>;
  /**
   * How many times each preview runs on the stack (default 1). Previews change
   * nothing, so repeating them buys more samples of the cheap operations
   * without repeating the expensive `up` and `destroy` at large N.
   */
  readonly previewRepeats?: number;
}

type ProcessCpu = EngineRun["cpuSeconds"][Operation];

/** The median CPU seconds of each process over several timed runs. */
function medianCpu(runs: readonly ProcessCpu[]): ProcessCpu {
  const part = (key: keyof ProcessCpu): number => median(runs.map((c) => c[key]));
  return { engine: part("engine"), provider: part("provider"), program: part("program") };
}

/** One kind at one N: a fresh stack and backend, the four operations in order. */
export async function runEngine(kind: Kind, n: number, options: EngineBenchOptions): Promise<EngineRun> {
  mkdirSync(options.workRoot, { recursive: true });
  const dir = mkdtempSync(path.join(options.workRoot, `${kind}-${n}-`));
  const workDir = path.join(dir, "program");
  const backendDir = path.join(dir, "state");
  mkdirSync(workDir);
  mkdirSync(backendDir);
  writeFileSync(path.join(workDir, "Pulumi.yaml"), `name: ${PROJECT}\nruntime: nodejs\n`);
  writeFileSync(path.join(workDir, "package.json"), `${JSON.stringify({ name: `bench-${kind}`, private: true, main: "index.js" })}\n`);
  writeFileSync(path.join(workDir, "index.js"), programSource(kind, n, path.basename(dir)));
  const stack: Stack = await LocalWorkspace.createOrSelectStack(
    { stackName: STACK, workDir },
    {
      envVars: {
        PULUMI_BACKEND_URL: `file://${backendDir}`,
        PULUMI_CONFIG_PASSPHRASE: "bench-passphrase",
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_HOME: path.join(dir, "pulumi-home"),
        USER_GROUPS_BASE_URL: options.server.url,
        USER_GROUPS_API_KEY: KEY,
        ...options.env,
      },
    },
  );
  const seconds = {} as Record<Operation, number>;
  const samples = {} as Record<Operation, readonly number[]>;
  const requests = {} as Record<Operation, Record<string, number>>;
  const cpuSeconds = {} as EngineRun["cpuSeconds"];
  let providerPeakBytes: number | undefined;
  let bytes = NaN;
  try {
    await takeRequestCounts(options.server, n);
    for (const operation of OPERATIONS) {
      const repeats = operation === "preview" || operation === "preview-unchanged" ? (options.previewRepeats ?? 1) : 1;
      const times: number[] = [];
      const cpus: ProcessCpu[] = [];
      for (let repeat = 0; repeat < repeats; repeat++) {
        const watch = watchPulumiProcesses();
        const started = performance.now();
        switch (operation) {
          case "preview":
          case "preview-unchanged":
            await stack.preview();
            break;
          case "up":
            await stack.up();
            break;
          case "destroy":
            await stack.destroy();
            break;
        }
        const elapsed = (performance.now() - started) / 1000;
        const cost = watch.stop();
        const c = { engine: cost.engineCpuSeconds, provider: cost.providerCpuSeconds, program: cost.programCpuSeconds };
        times.push(elapsed);
        cpus.push(c);
        if (operation === "up") providerPeakBytes = cost.providerPeakBytes;
        options.log(
          `  ${kind.padEnd(12)} N=${String(n).padStart(4)} ${operation.padEnd(17)} ${elapsed.toFixed(2).padStart(7)} s` +
            `   cpu s: engine ${c.engine.toFixed(1)}, provider ${c.provider.toFixed(1)}, program ${c.program.toFixed(1)}`,
        );
      }
      samples[operation] = times;
      seconds[operation] = median(times);
      cpuSeconds[operation] = medianCpu(cpus);
      if (operation === "up") bytes = stateBytesPerResource(backendDir, kind === "ours" ? USER_GROUP_TYPE : FLOOR_TYPE, n);
      if (kind === "ours") requests[operation] = await takeRequestCounts(options.server, n * repeats);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    kind,
    n,
    seconds,
    samples,
    stateBytesPerResource: bytes,
    providerPeakBytes,
    cpuSeconds,
    ...(kind === "ours" ? { requestsPerResource: requests } : {}),
  };
}

/**
 * Repetitions of one kind at one N as one run: the median and range of every
 * timed run of each operation, the median CPU, the largest peak memory.
 */
export function mergeRuns(reps: readonly EngineRun[]): EngineRun {
  const first = reps[0];
  if (first === undefined) throw new Error("mergeRuns: no runs");
  const seconds = {} as Record<Operation, number>;
  const secondsRange: Partial<Record<Operation, readonly [number, number]>> = {};
  const samples = {} as Record<Operation, readonly number[]>;
  const cpuSeconds = {} as EngineRun["cpuSeconds"];
  for (const operation of OPERATIONS) {
    const times = reps.flatMap((r) => r.samples?.[operation] ?? [r.seconds[operation]]);
    samples[operation] = times;
    seconds[operation] = median(times);
    if (times.length > 1) secondsRange[operation] = [Math.min(...times), Math.max(...times)];
    cpuSeconds[operation] = medianCpu(reps.map((r) => r.cpuSeconds[operation]));
  }
  const peaks = reps.map((r) => r.providerPeakBytes).filter((p): p is number => p !== undefined);
  return {
    ...first,
    seconds,
    ...(Object.keys(secondsRange).length > 0 ? { secondsRange } : {}),
    repetitions: reps.length,
    samples,
    cpuSeconds,
    providerPeakBytes: peaks.length > 0 ? Math.max(...peaks) : undefined,
  };
}

/**
 * Every N, the two floors and ours, `reps(n)` times, against one fake server
 * in a worker thread. Alternating the order of the kinds spreads the noise of
 * a shared machine over all of them; the medians damp it.
 */
export async function compareEngine(
  ns: readonly number[],
  reps: (n: number) => number,
  workRoot: string,
  log: (line: string) => void,
  env: Record<string, string> = {},
  kinds: readonly Kind[] = KINDS,
  previewRepeats = 1,
): Promise<EngineRun[]> {
  // A journal large enough to count every request of the largest operation.
  const server = await startServerThread("fake", Math.max(...ns) * 8);
  const runs: EngineRun[] = [];
  try {
    for (const n of ns) {
      const byKind = new Map<Kind, EngineRun[]>(kinds.map((kind) => [kind, []]));
      for (let rep = 0; rep < reps(n); rep++) {
        // In order on even repetitions, reversed on odd ones: a load change on the machine hits all alike.
        const order = rep % 2 === 0 ? kinds : [...kinds].reverse();
        for (const kind of order) byKind.get(kind)!.push(await runEngine(kind, n, { workRoot, server, log, env, previewRepeats }));
      }
      for (const kind of kinds) runs.push(mergeRuns(byKind.get(kind)!));
    }
  } finally {
    await server.close();
  }
  return runs;
}
