// npm run bench [-- --quick] [--only servers,client,engine,fleet,signups,takeover,scale,faults,observability,stores] [--n 10,100] [--reps 3] [--preview-reps 3] [--server-rounds 5] [--out DIR] [--skip-checkpoints]
// Runs every benchmark of the package side by side with its reference, on
// this machine, in one run:
//   servers  fake server vs bare node:http (bench/fake-server.ts)
//   client   UserGroupsClient vs raw undici.request (bench/client-vs-undici.ts)
//   engine   pulumi preview/up/destroy of N UserGroups vs N no-op dynamic
//            resources (two floors: plain, and of a UserGroup's shape with
//            the same outputs and a secret token), state bytes per group,
//            dynamic-provider peak memory (bench/engine-vs-floor.ts)
//   fleet    UserGroupFleet: one ensure in a fleet of N against provisionUserGroups
//            of N+1, 50 concurrent ensures, 3 processes on PostgreSQL (bench/fleet.ts);
//            written to fleet.{json,md} and perf-fleet.svg beside the others
//   signups  record-first sign-ups (issue #44): one sign-up at N (100, 1000; quick: 100),
//            a burst of 50 on one replica and spread over 3 replicas on PostgreSQL,
//            each against its goal (bench/sign-up.ts); signups.{json,md}
//   takeover a replica SIGKILLed mid-run (5 kills at random points on PostgreSQL,
//            1 on a file backend), the other replica taking over: time from the
//            kill to the next served sign-up (bench/takeover.ts); takeover.{json,md}
//   scale    1,000, 3,000 and 10,000 groups (--n overrides; quick: 100, 300): up,
//            unchanged preview, drift, destroy against both floors, peak memory of
//            the engine and providers, the fleet (ensureMany, one ensure against a
//            fleet of 300, list), crash trials at up to 3,000 (bench/scale.ts);
//            scale.{json,md} and perf-scale.svg. The floors run without a checkpoint
//            per step (linear); BENCH_SCALE_FLOOR_CHECKPOINTS=1 keeps them (quadratic:
//            hours at 10,000)
//   observability  the telemetry's cost with no OpenTelemetry SDK and with one: the
//            automation spans per call, the HTTP client against the fake server
//            (bench/observability.ts); observability.{json,md}
//   faults   fault histories as Jepsen runs them (issue 32): per backend and fault
//            kind (kill, pause, partitions through Toxiproxy, PostgreSQL restart,
//            slow disk, stalled node, remove/ensure race), three replicas on
//            colliding ids, checked: time to serve again, groups lost / doubled /
//            orphaned, tokens differing (bench/faults.ts); faults.{json,md}. Not
//            in the default set (about 20 minutes): ask for it with --only faults
//   stores   one sign-up on PostgreSQL, S3 (moto), Azure Blob (Azurite), GCS
//            (fake-gcs-server): its latency, the requests to the store (a counting
//            proxy) or PostgreSQL's transactions (bench/store-cost.ts); stores.{json,md}.
//            Not in the default set: --only stores
// Quick mode (--quick or BENCH_QUICK=1) took 13.5 minutes on a busy 2-core machine
// (docs/performance.md); the full mode
// (N up to 1000) much longer. Results go to results.json and results.md in the
// output directory (default: docs/bench/ in full mode, .work/bench-quick/ in
// quick mode, so a quick run never overwrites the published figures), and the
// charts to docs/ (full) or that same directory (quick).
// The floor of a UserGroup's shape (what its outputs and secret token cost
// Pulumi) is always measured; BENCH_FLOOR_SECRET=1, which used to switch the
// floor to a secret one, is still accepted and changes nothing.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { compareClients } from "./client-vs-undici.js";
import { compareEngine } from "./engine-vs-floor.js";
import { compareServers } from "./fake-server.js";
import { compareFleet } from "./fleet.js";
import { measureTakeover, takeoverMarkdown } from "./takeover.js";
import { measureSignUps, signUpsMarkdown } from "./sign-up.js";
import { faultsMarkdown, measureFaults } from "./faults.js";
import { measureStoreCost, storeCostMarkdown } from "./store-cost.js";
import { fleetChart, fleetMarkdown } from "./fleet-report.js";
import { measureScale } from "./scale.js";
import { measureObservability, observabilityMarkdown } from "./observability.js";
import { scaleChart, scaleMarkdown } from "./scale-report.js";
import { type BenchResults, clientTable, cpuTable, engineCharts, engineTable, type Machine, markdownReport, ratioTable, resourceTable, serversTable } from "./report.js";

const REPO_ROOT = path.resolve(__dirname, "../..");
type Part = "servers" | "client" | "engine" | "fleet" | "signups" | "takeover" | "scale" | "faults" | "observability" | "stores";
const PARTS: readonly Part[] = ["servers", "client", "engine", "fleet", "signups", "takeover", "scale", "faults", "observability", "stores"];
/** What runs without --only (the fault histories take long: --only faults). */
const DEFAULT_PARTS: readonly Part[] = ["servers", "client", "engine", "fleet", "signups", "takeover", "scale", "observability"];
/** Parts that write files of their own and leave results.{json,md} as they are. */
const OWN_FILES: readonly Part[] = ["fleet", "signups", "takeover", "scale", "faults", "observability", "stores"];

interface Settings {
  readonly quick: boolean;
  readonly parts: readonly Part[];
  readonly outDir: string;
  readonly chartDir: string;
  readonly ns: readonly number[];
  /** The scale part's N (--n overrides these too). */
  readonly scaleNs: readonly number[];
  /** Repetitions of each kind at each N (the median is reported). */
  readonly reps: (n: number) => number;
  /** How many times each preview runs per stack (previews change nothing: cheap extra samples). */
  readonly previewRepeats: number;
  readonly serverSeconds: number;
  readonly clientSeconds: number;
  /** Rounds of the client comparison (best of each kept). */
  readonly loadRounds: number;
  /** Rounds of the server comparison (the median round is reported). */
  readonly serverRounds: number;
  /** Run the engine with PULUMI_SKIP_CHECKPOINTS=true (no state write per step, only at the end). */
  readonly skipCheckpoints: boolean;
}

function settingsFrom(argv: readonly string[], env: NodeJS.ProcessEnv): Settings {
  const quick = argv.includes("--quick") || (env["BENCH_QUICK"] !== undefined && env["BENCH_QUICK"] !== "0" && env["BENCH_QUICK"] !== "");
  const valueOf = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const only = valueOf("--only");
  const parts = only === undefined ? DEFAULT_PARTS : only.split(",").map((p) => p.trim());
  for (const part of parts) if (!PARTS.includes(part as Part)) throw new Error(`--only takes ${PARTS.join(",")}; got "${part}"`);
  const outDir = path.resolve(valueOf("--out") ?? (quick ? path.join(REPO_ROOT, ".work", "bench-quick") : path.join(REPO_ROOT, "docs", "bench")));
  const nsText = valueOf("--n");
  return {
    quick,
    parts: parts as Part[],
    outDir,
    chartDir: valueOf("--out") !== undefined || quick ? outDir : path.join(REPO_ROOT, "docs"),
    ns: nsText !== undefined ? nsText.split(",").map(Number) : quick ? [10, 50] : [10, 100, 1000],
    scaleNs: nsText !== undefined ? nsText.split(",").map(Number) : quick ? [100, 300] : [1000, 3000, 10_000],
    reps: (n) => Number(valueOf("--reps") ?? (quick ? 1 : n >= 1000 ? 3 : 5)),
    previewRepeats: Number(valueOf("--preview-reps") ?? (quick ? 1 : 3)),
    serverSeconds: quick ? 2 : 5,
    clientSeconds: quick ? 2 : 5,
    loadRounds: quick ? 1 : 3,
    serverRounds: Number(valueOf("--server-rounds") ?? (quick ? 1 : 5)),
    skipCheckpoints: argv.includes("--skip-checkpoints"),
  };
}

function load1(): number {
  return os.loadavg()[0] ?? NaN;
}

function pulumiVersion(): string {
  try {
    return execFileSync("pulumi", ["version"], { encoding: "utf8", env: { ...process.env, PULUMI_SKIP_UPDATE_CHECK: "true" } }).trim();
  } catch {
    return "not on PATH";
  }
}

function machine(load: Machine["load"]): Machine {
  return {
    date: new Date().toISOString(),
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGiB: os.totalmem() / 1024 ** 3,
    node: process.version,
    pulumi: pulumiVersion(),
    pulumiSdk: (require("@pulumi/pulumi/package.json") as { version: string }).version,
    load,
  };
}

async function main(): Promise<void> {
  // The fake server here is unthrottled: no rate budget (the provider's default is the real service's 180/60).
  process.env.USER_GROUPS_RATE_LIMIT ??= "off";
  const settings = settingsFrom(process.argv.slice(2), process.env);
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  const load: Record<string, [number, number]> = {};
  const results: { -readonly [K in keyof BenchResults]: BenchResults[K] } = {
    mode: settings.quick ? "quick" : "full",
    skipCheckpoints: settings.skipCheckpoints,
    machine: machine(load),
  };
  log(`bench (${results.mode}): ${settings.parts.join(", ")}; ${os.availableParallelism()} CPUs, load ${load1().toFixed(1)}`);
  if (process.env["BENCH_FLOOR_SECRET"] === "1") log("BENCH_FLOOR_SECRET=1 is no longer needed: the floor of a UserGroup's shape, secret token included, is measured in every run (\"shaped floor\")");
  if (settings.parts.includes("observability")) {
    const rounds = settings.quick ? 3 : 7;
    log(`\n# observability: the telemetry's cost with no OpenTelemetry SDK and with one (${rounds} rounds, alternating)`);
    const before = load1();
    const observability = await measureObservability({ rounds, calls: settings.quick ? 20_000 : 100_000, seconds: settings.quick ? 2 : 4 }, log);
    load["observability"] = [before, load1()];
    const markdown = observabilityMarkdown(observability);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "observability.json"), `${JSON.stringify({ machine: machine(load), observability }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "observability.md"), `# Observability benchmark (${results.mode} mode)\n\nGenerated by \`npm run bench -- --only observability\`.\n\n${markdown}\n`);
  }
  if (settings.parts.includes("servers")) {
    log(`\n# fake server vs bare node:http (${settings.serverRounds} rounds of ${settings.serverSeconds}s of each)`);
    const before = load1();
    results.servers = await compareServers(settings.serverSeconds, settings.serverRounds);
    load["servers"] = [before, load1()];
    log(serversTable(results.servers));
  }
  if (settings.parts.includes("client")) {
    log(`\n# UserGroupsClient vs raw undici.request (32 in flight, ${settings.loadRounds} x ${settings.clientSeconds}s each)`);
    const before = load1();
    results.client = await compareClients({ seconds: settings.clientSeconds, rounds: settings.loadRounds, inFlight: 32 });
    load["client"] = [before, load1()];
    log(clientTable(results.client));
  }
  if (settings.parts.includes("engine")) {
    log(`\n# pulumi preview/up/destroy, N = ${settings.ns.join(", ")}${settings.skipCheckpoints ? ", PULUMI_SKIP_CHECKPOINTS=true" : ""}`);
    const before = load1();
    results.engine = await compareEngine(settings.ns, settings.reps, path.join(REPO_ROOT, ".work", "bench-engine"),
      log,
      settings.skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: "true" } : {},
      undefined,
      settings.previewRepeats,
    );
    load["engine"] = [before, load1()];
    log(ratioTable(results.engine));
    log("");
    log(engineTable(results.engine, "floor"));
    log("");
    log(engineTable(results.engine, "floor-shaped"));
    log("");
    log(cpuTable(results.engine));
    log("");
    log(resourceTable(results.engine));
  }
  if (settings.parts.includes("fleet")) {
    const ns = settings.quick ? [10, 50] : [100, 1000];
    log(`\n# UserGroupFleet: one ensure in a fleet of N = ${ns.join(", ")} vs provisionUserGroups of N+1; 50 concurrent; 3 processes on PostgreSQL`);
    const before = load1();
    const fleet = await compareFleet(ns, (n) => Number(settings.quick ? 1 : n >= 1000 ? 3 : 5), path.join(REPO_ROOT, ".work", "bench-fleet"), REPO_ROOT, log);
    load["fleet"] = [before, load1()];
    const markdown = fleetMarkdown(fleet);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "fleet.json"), `${JSON.stringify({ machine: machine(load), fleet }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "fleet.md"), `# Fleet benchmark (${results.mode} mode)\n\nGenerated by \`npm run bench -- --only fleet\`.\n\n${markdown}\n`);
    mkdirSync(settings.chartDir, { recursive: true });
    writeFileSync(path.join(settings.chartDir, "perf-fleet.svg"), fleetChart(fleet));
  }
  if (settings.parts.includes("takeover")) {
    const kills = Number(process.env["BENCH_TAKEOVER_KILLS"] ?? "5");
    const seed = Number(process.env["BENCH_TAKEOVER_SEED"] ?? String(Date.now() % 100_000));
    if (!Number.isInteger(kills) || kills < 1) throw new Error("BENCH_TAKEOVER_KILLS must be an integer >= 1");
    log(`\n# takeover: a replica SIGKILLed mid-run, ${kills} kills on PostgreSQL and 1 on a file backend (BENCH_TAKEOVER_SEED=${seed})`);
    const before = load1();
    const takeover = await measureTakeover(kills, seed, path.join(REPO_ROOT, ".work", "bench-takeover"), REPO_ROOT, log);
    load["takeover"] = [before, load1()];
    const markdown = takeoverMarkdown(takeover);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "takeover.json"), `${JSON.stringify({ machine: machine(load), seed, takeover }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "takeover.md"), `# Takeover benchmark\n\nGenerated by \`npm run bench -- --only takeover\` (BENCH_TAKEOVER_SEED=${seed}).\n\n${markdown}\n`);
  }
  if (settings.parts.includes("scale")) {
    const ns = settings.scaleNs;
    const crashNs = ns.filter((n) => n <= 3000);
    log(`\n# scale: N = ${ns.join(", ")}: CLI operations against both floors, the fleet (one ensure against a fleet of 300), crash trials at N = ${crashNs.join(", ")}`);
    const before = load1();
    const floorCheckpoints = process.env["BENCH_SCALE_FLOOR_CHECKPOINTS"] === "1";
    const scale = await measureScale({ ns, crashNs, ensureReps: settings.quick ? 3 : 5, floorCheckpoints, workRoot: path.join(REPO_ROOT, ".work", "bench-scale"), repoRoot: REPO_ROOT, log });
    load["scale"] = [before, load1()];
    const markdown = scaleMarkdown(scale);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "scale.json"), `${JSON.stringify({ mode: results.mode, machine: machine(load), scale }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "scale.md"), `# Scale benchmark (${results.mode} mode)\n\nGenerated by \`npm run bench -- --only scale\`.\n\n${markdown}\n`);
    mkdirSync(settings.chartDir, { recursive: true });
    writeFileSync(path.join(settings.chartDir, "perf-scale.svg"), scaleChart(scale, results.mode));
  }
  if (settings.parts.includes("signups")) {
    log(`\n# sign-ups (issue #44): one record-first sign-up at N, bursts of 50 on one replica and over 3 on PostgreSQL`);
    const before = load1();
    const signUps = await measureSignUps(
      { ns: settings.quick ? [100] : [100, 1000], reps: settings.quick ? 5 : 9, slowReps: 2, burst: 50, replicas: 3, pgN: 100 },
      path.join(REPO_ROOT, ".work", "bench-sign-up"),
    );
    load["signups"] = [before, load1()];
    const markdown = signUpsMarkdown(signUps);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "signups.json"), `${JSON.stringify({ machine: machine(load), ...signUps }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "signups.md"), `# Record-first sign-ups\n\nGenerated by \`npm run bench -- --only signups\`.\n\n${markdown}\n`);
  }
  if (settings.parts.includes("faults")) {
    log(`\n# fault histories (issue 32): per backend and fault kind, three replicas on colliding ids`);
    const before = load1();
    const faults = await measureFaults(path.join(REPO_ROOT, ".work", "bench-faults"), REPO_ROOT, log);
    load["faults"] = [before, load1()];
    const markdown = faultsMarkdown(faults);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "faults.json"), `${JSON.stringify({ machine: machine(load), ...faults }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "faults.md"), `# Fault histories\n\nGenerated by \`npm run bench -- --only faults\` (BENCH_FAULTS_SEED=${faults.seed}).\n\n${markdown}\n`);
  }
  if (settings.parts.includes("stores")) {
    log(`\n# stores (issue 42 item 6): one sign-up on PostgreSQL, S3, Azure Blob and GCS: latency, requests to the store`);
    const before = load1();
    const stores = await measureStoreCost(path.join(REPO_ROOT, ".work", "bench-stores"), log);
    load["stores"] = [before, load1()];
    const markdown = storeCostMarkdown(stores);
    log(markdown);
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(path.join(settings.outDir, "stores.json"), `${JSON.stringify({ machine: machine(load), stores }, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "stores.md"), `# One sign-up per backend\n\nGenerated by \`npm run bench -- --only stores\`.\n\n${markdown}\n`);
  }
  results.machine = machine(load);
  mkdirSync(settings.outDir, { recursive: true });
  // A fleet- or takeover-only run keeps the published figures of the other parts.
  if (settings.parts.some((part) => !OWN_FILES.includes(part))) {
    writeFileSync(path.join(settings.outDir, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(path.join(settings.outDir, "results.md"), markdownReport(results));
  }
  if (results.engine) {
    mkdirSync(settings.chartDir, { recursive: true });
    for (const [name, svg] of engineCharts(results.engine)) writeFileSync(path.join(settings.chartDir, name), svg);
  }
  const written = [
    settings.parts.some((part) => !OWN_FILES.includes(part)) ? "results.{json,md}" : "",
    settings.parts.includes("fleet") ? "fleet.{json,md}" : "",
    settings.parts.includes("signups") ? "signups.{json,md}" : "",
    settings.parts.includes("takeover") ? "takeover.{json,md}" : "",
    settings.parts.includes("scale") ? "scale.{json,md}" : "",
    settings.parts.includes("faults") ? "faults.{json,md}" : "",
    settings.parts.includes("stores") ? "stores.{json,md}" : "",
  ].filter(Boolean);
  log(`\nwrote ${written.map((name) => `${path.relative(REPO_ROOT, settings.outDir)}/${name}`).join(" and ")}${results.engine || settings.parts.includes("fleet") || settings.parts.includes("scale") ? ` and charts in ${path.relative(REPO_ROOT, settings.chartDir)}/` : ""}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
