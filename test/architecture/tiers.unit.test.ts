// The unit tier stays what CONTRIBUTING.md says it is ("Which tests to run when"):
// no *.unit.test.ts reaches for the engine, a database, a browser, a built tool or
// dist/, not even through a helper, so `npm run test:unit` runs with nothing built.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "..", "..");

/** What a unit test may not load: each needs the engine, PostgreSQL, a browser, a built tool or the build. */
const ENGINE_TIER_ONLY: ReadonlyArray<readonly [RegExp, string]> = [
  [/support\/(stack-fixture|pulumi-env|user-groups-cli|user-group-stack|example-harness|global-setup)"/, "a helper that runs the Pulumi engine"],
  [/\bLocalWorkspace\b|\bcreateOrSelectStack\b|\bStack\.(create|select)\(/, "the Automation API's stacks (the engine)"],
  [/testkit\/(postgres|otel-collector|takeover-trial|crash-trials|rate-limited-up|jepsen\/(run-history|toxiproxy|replica|linearizability))"/, "PostgreSQL, a built tool or a replica harness"],
  [/playwright|chromium/, "a browser"],
  [/["'/](dist|build)\//, "the build"],
  [/(?<![.\w])inject\(/, "the engine tier's global setup"],
];

function unitTests(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return unitTests(rel);
    return entry.name.endsWith(".unit.test.ts") ? [rel] : [];
  });
}

describe("the unit tier", () => {
  const files = unitTests("test");

  it("exists, with the rules that need no engine", () => {
    expect(files.length).toBeGreaterThan(30);
    expect(files).toEqual(expect.arrayContaining(["test/logic/diff.unit.test.ts", "test/wire/error-codes.unit.test.ts", "test/architecture/tiers.unit.test.ts"]));
  });

  it("loads nothing that needs the engine, a database, a browser, a built tool or dist/", () => {
    const found: string[] = [];
    // (This file names each of them, as the samples below.)
    for (const file of files.filter((f) => f !== "test/architecture/tiers.unit.test.ts")) {
      const text = readFileSync(path.join(ROOT, file), "utf8");
      for (const [pattern, what] of ENGINE_TIER_ONLY) if (pattern.test(text)) found.push(`${file}: ${what} (${pattern.exec(text)![0]})`);
    }
    expect(found).toEqual([]);
  });

  it("catches such a file (each rule fires)", () => {
    const samples = [
      'import { useStackFixture } from "../support/stack-fixture";',
      'const ws = await LocalWorkspace.create({ workDir });',
      'import { startPostgres } from "../../testkit/postgres";',
      'import { chromium } from "playwright-core";',
      'const entry = require("../../dist/provider/index.js");',
      'const bin = inject("pulumiBinDir");',
      'propagation.inject(context.active(), headers);',
    ];
    expect(samples.map((sample) => ENGINE_TIER_ONLY.findIndex(([pattern]) => pattern.test(sample)))).toEqual([0, 1, 2, 3, 4, 5, -1]);
  });
});
