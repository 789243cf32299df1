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
import { configDefaults, defineConfig } from "vitest/config";

const UNIT = "test/**/*.unit.test.ts";

// The fake server is unthrottled unless a test says otherwise: no rate budget (180/60 by default) unless a test sets one.
process.env["USER_GROUPS_RATE_LIMIT"] ??= "off";

export default defineConfig({
  test: {
    // Pulumi engine runs take seconds each, on a machine often shared; a unit test ends in seconds regardless.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Most engine files wait on engine subprocesses and servers, not the CPU: run
    // several at once (vitest's default is one worker per core minus one).
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: { name: "unit", include: [UNIT] },
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
