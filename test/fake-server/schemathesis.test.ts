// Schemathesis (PyPI) against the running fake server, from its own OpenAPI
// document: every check, every phase, the stateful one included, seeded and
// bounded (test/fake-server/schemathesis.toml). Any failure is either a server
// bug or a document that does not say what the server does (issue #23 item 10).
// Schemathesis lives in a cached virtualenv made by scripts/ensure-schemathesis.
// `npm test` runs it with MAX_EXAMPLES cases per operation and phase (about 600
// cases, every phase still reached); the config's full bound (300: about 2,000
// cases) is `npm run bench:schemathesis` (bench/schemathesis.ts).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { KEYS, start } from "./helpers.js";

const ROOT = join(__dirname, "..", "..");
const CONFIG = join(__dirname, "schemathesis.toml");
const IN_CI = process.env.CI === "true";
const HAVE_VENV = spawnSync("python3", ["-c", "import ensurepip, venv"], { stdio: "ignore" }).status === 0;
const INSTALL_HINT = "no python3 with its venv module; install it with `apt-get install python3-venv` (Debian/Ubuntu, as root)";
if (!HAVE_VENV && !IN_CI) console.warn(`Schemathesis test skipped: ${INSTALL_HINT}. With CI=true it fails instead.`);

/**
 * Cases per operation and phase in `npm test` (the config's 300 is the bench's full run): every phase,
 * check and stateful link still runs, at about a third of the CPU.
 */
const MAX_EXAMPLES = 40;
/** Longest the run may take; MAX_EXAMPLES keeps it well under a minute on an idle 2-core machine. */
const RUN_LIMIT_MS = 240_000;
/** Address space for Schemathesis (KiB): a document that made it expand schemas without end once took 23 GB. */
const MEMORY_LIMIT_KB = 3_000_000;

/** The parts of Schemathesis's JSON run report this test reads. */
interface RunReport {
  schemathesis_version: string;
  seed: number;
  running_time: number;
  complete: boolean;
  exit_code: number;
  phases: Record<string, { status: string }>;
  test_cases: { generated: number; with_failures: number; errored: number };
  failures: unknown[];
  errors: unknown[];
}

function runSchemathesis(st: string, url: string, reportDir: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "/bin/sh",
      ["-c", `ulimit -v ${MEMORY_LIMIT_KB}; exec "$@"`, "sh", st, "--config-file", CONFIG, "run", "--max-examples", String(MAX_EXAMPLES), "--report", "json", "--report-dir", reportDir, url],
      // The key travels in the environment (the config reads it), never on the command line.
      // In the run's own directory: nothing lands in the repository.
      { cwd: reportDir, env: { ...process.env, USER_GROUPS_SCHEMATHESIS_API_KEY: KEYS.customer }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_LIMIT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe.skipIf(!HAVE_VENV && !IN_CI)("Schemathesis against the fake server", () => {
  let st = "";
  let server: FakeServer;
  let dir = "";

  beforeAll(async () => {
    if (!HAVE_VENV) throw new Error(`CI=true: ${INSTALL_HINT}`);
    // Installs on the first run only (about 20 s with PyPI reachable).
    const stdout = execFileSync(join(ROOT, "scripts", "ensure-schemathesis"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    st = stdout.trim().split("\n").at(-1) ?? "";
    // Room in the journal for every request of the run, to see what the stateful phase reached.
    server = await start({ journalSize: 100_000 });
    dir = await mkdtemp(join(tmpdir(), "schemathesis-"));
  }, 600_000);

  afterAll(async () => {
    await server?.close();
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it(
    "finds no failure with every check and every phase, and its stateful phase chains tokens into POST and DELETE",
    async () => {
      const { code, output } = await runSchemathesis(st, `${server.url}/openapi.json`, dir);
      const reports = (await readdir(dir)).filter((name) => name.startsWith("json-") && name.endsWith(".json"));
      expect(reports, output).toHaveLength(1);
      const report = JSON.parse(await readFile(join(dir, reports[0] ?? ""), "utf8")) as RunReport;
      expect({ code, failures: report.failures, errors: report.errors }, output).toEqual({ code: 0, failures: [], errors: [] });
      expect(report).toMatchObject({ complete: true, exit_code: 0, test_cases: { with_failures: 0, errored: 0 } });
      expect(report.phases).toMatchObject({ coverage: { status: "success" }, fuzzing: { status: "success" }, stateful: { status: "success" } });
      // The seeded run generates 607 cases: a run that reached far fewer did not test what it says.
      expect(report.test_cases.generated).toBeGreaterThan(500);

      // A random current_token never names a group: a 200 for POST or DELETE means a
      // link carried a token a GET, PUT or POST had answered.
      const answered = (method: string) => server.journal().filter((entry) => entry.method === method && entry.status === 200).length;
      expect({ POST: answered("POST") > 0, DELETE: answered("DELETE") > 0, PUT: answered("PUT") > 0 }).toEqual({ POST: true, DELETE: true, PUT: true });
      // The key never reached the report (Schemathesis filters the Authorization header).
      expect(await readFile(join(dir, reports[0] ?? ""), "utf8")).not.toContain(KEYS.customer);
      console.log(
        `schemathesis ${report.schemathesis_version}, seed ${report.seed}: ${report.test_cases.generated} cases in ` +
          `${report.running_time.toFixed(1)} s, ${report.failures.length} failures; ${server.journal().length} requests`,
      );
    },
    RUN_LIMIT_MS + 30_000,
  );
});
