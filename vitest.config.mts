// Two tiers (CONTRIBUTING.md, "Which tests to run when"), both run by `npm test`:
// - unit: test/**/*.unit.test.ts, and the type tests test/**/*.test-d.ts (project
//   "types"). No Pulumi engine, database, browser, built tools or dist/: plain
//   functions, the clock seam, the emulator in process. `npm run test:unit` runs them
//   alone, without building anything.
// - engine: every other test/**/*.test.ts (a new file lands here unless it is named
//   *.unit.test.ts). Its global setup makes the Pulumi engine available; the tools a few
//   files need beyond it (PostgreSQL, the YAML and SDK hosts, the OpenTelemetry
//   Collector, Toxiproxy, chromium) are ensured by those files when they start.
// One pool for both: the fast files fill the gaps the engine files leave while they wait.
import { readFileSync } from "node:fs";
import path from "node:path";
import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const UNIT = "test/**/*.unit.test.ts";

// The fake server is unthrottled unless a test says otherwise: no rate budget (180/60 by default) unless a test sets one.
process.env["USER_GROUPS_RATE_LIMIT"] ??= "off";

// The order the files start in: the longest first, so that no long file starts near the end with the other
// workers idle. vitest's own order does that from its cache of the last run (node_modules/.vite/vitest); a file it
// has no result for (a fresh clone, CI) it runs by size, largest first, and the fault histories' files are among the
// smallest (a dozen lines declaring minutes of history): they started last and ran on alone for minutes. Here a file
// with no result of its own takes its time from test/file-times.json (seconds, from a full run; refresh it now and
// then from `npx vitest run --reporter=json`); a file in neither (a new one) runs first, as vitest runs a file it
// knows nothing about.
const FILE_SECONDS = JSON.parse(readFileSync(path.join(import.meta.dirname, "test/file-times.json"), "utf8")) as Record<string, number>;

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files); // projects one after another: kept
    const root = this.ctx.config.root;
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    const keyOf = (spec: TestSpecification, rank: number) => {
      const last = this.ctx.cache.getTestSpecificationResult(spec);
      const table = FILE_SECONDS[path.relative(root, spec.moduleId).split(path.sep).join("/")];
      const ms = last?.duration ?? (table === undefined ? undefined : table * 1000);
      // Failed last time first (vitest's rule), then unknown, then the longest; vitest's order breaks ties.
      return [projects.indexOf(spec.project.name), last?.failed === true ? 0 : 1, ms === undefined ? 0 : 1, -(ms ?? 0), rank];
    };
    const keyed = sorted.map((spec, rank) => ({ spec, key: keyOf(spec, rank) }));
    keyed.sort((a, b) => a.key.reduce((diff, value, i) => diff || value - b.key[i]!, 0));
    return keyed.map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    // Pulumi engine runs take seconds each, on a machine often shared; a unit test ends in seconds regardless.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // CPU per file when USER_GROUPS_TEST_CPU_LOG is set (.ci/run sets it); otherwise nothing.
    setupFiles: ["test/support/cpu-per-file.ts"],
    // Most engine files wait on engine subprocesses and servers, not the CPU: run
    // several at once (vitest's default is one worker per core minus one).
    maxWorkers: 3,
    // Longest files first, also on a fresh clone with no cache of the last run (LongestFirst above).
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        // One module graph per worker, not per file: the unit files' own time is a third of their cost, the rest
        // was loading the same modules again for each file. A file that mocks a module resets them itself.
        test: { name: "unit", include: [UNIT], isolate: false },
      },
      {
        // Type tests (*.test-d.ts): tsc checks their expectTypeOf assertions and vitest reports each failed one as a
        // failed test (at run time expectTypeOf checks nothing, so a type assertion in a *.test.ts would always pass).
        extends: true,
        test: { name: "types", include: [], typecheck: { enabled: true, only: true, include: ["test/**/*.test-d.ts"], tsconfig: "test/tsconfig.types.json" } },
      },
      {
        extends: true,
        test: { name: "engine", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, UNIT], globalSetup: ["test/support/global-setup.ts"] },
      },
    ],
  },
});
