// The layering of provider/ and fake-server/ (docs/architecture.md), held by a
// real dependency checker: dependency-cruiser with .dependency-cruiser.cjs.
// The rules are also run on a small tree that breaks them, so a rule that
// cannot fire (a wrong path pattern) fails here too.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "..", "..");
const DEPCRUISE = path.join(ROOT, "node_modules", "dependency-cruiser", "bin", "dependency-cruiser.mjs");

interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: { readonly name: string };
}

function cruise(cwd: string, dirs: readonly string[]): Violation[] {
  // It exits non-zero when it finds violations: the JSON on stdout says which.
  const run = spawnSync(process.execPath, [DEPCRUISE, "--config", ".dependency-cruiser.cjs", "--output-type", "json", ...dirs], {
    cwd,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!run.stdout.trim().startsWith("{")) throw new Error(`dependency-cruiser failed (${run.status}): ${run.stderr}`);
  return (JSON.parse(run.stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("layers", () => {
  it("the product, the benches, the scripts and the test kit break no rule: no cycle, no upward import, folders entered through index.ts", () => {
    const violations = cruise(ROOT, ["provider", "fake-server", "testing", "bench", "scripts", "testkit"]);
    expect(violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  });

  it("every rule fires on a tree that breaks it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "layers-"));
    scratch.push(dir);
    cpSync(path.join(ROOT, ".dependency-cruiser.cjs"), path.join(dir, ".dependency-cruiser.cjs"));
    writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext", strict: true } }));
    const files: Record<string, string> = {
      // wire -> cli: upward
      "provider/wire/schemas.ts": 'import { run } from "../cli/run";\nexport const schema = run;\n',
      "provider/cli/run.ts": 'import { internal } from "../automation/engine/open-stack";\nexport const run = internal;\n',
      // a cycle in the client
      "provider/client/a.ts": 'import { b } from "./b";\nexport const a = b;\n',
      "provider/client/b.ts": 'import { a } from "./a";\nexport const b = () => a;\n',
      // model -> engine: upward inside automation; engine's file from another folder without its index
      "provider/automation/model/results.ts": 'import { internal } from "../engine/open-stack";\nexport const results = internal;\n',
      "provider/automation/engine/open-stack.ts": "export const internal = 1;\n",
      "provider/automation/engine/index.ts": 'export { internal } from "./open-stack";\n',
      // a sub-folder of engine/ entered past its index.ts
      "provider/automation/engine/state/document.ts": "export const document = 1;\n",
      "provider/automation/engine/state/index.ts": 'export { document } from "./document";\n',
      "provider/automation/engine/run-once.ts": 'import { document } from "./state/document";\nexport const run = document;\n',
      // the emulator reaching into the client
      "fake-server/server.ts": 'import { a } from "../provider/client/a";\nexport const server = a;\n',
      // a bench importing a test's helper
      "bench/run.ts": 'import { helper } from "../test/support/helper";\nexport const bench = helper;\n',
      "test/support/helper.ts": "export const helper = 1;\n",
      // a cycle in the benches (bench/ is checked for cycles too)
      "bench/report.ts": 'import { floor } from "./floors";\nexport const report = floor;\n',
      "bench/floors.ts": 'import { report } from "./report";\nexport const floor = () => report;\n',
      // the CLI's output folder entered past its index.ts
      "provider/cli/output/table.ts": "export const table = 1;\n",
      "provider/cli/output/index.ts": 'export { table } from "./table";\n',
      "provider/cli/print.ts": 'import { table } from "./output/table";\nexport const print = table;\n',
      // an OpenTelemetry SDK package outside the CLI's setup module
      "provider/client/otel.ts": 'import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";\nexport const otel = BasicTracerProvider;\n',
      "provider/cli/telemetry-setup.ts": 'export const setup = () => import("@opentelemetry/sdk-metrics");\n',
      // the backends: one reaching up into the client, an adapter into another's folder, the interface into an
      // adapter, and the client past the registry
      "provider/backends/up.ts": 'import { a } from "../client/a";\nexport const up = a;\n',
      "provider/backends/postgres/session.ts": "export const session = 1;\n",
      "provider/backends/file/store.ts": 'import { session } from "../postgres/session";\nexport const store = session;\n',
      "provider/backends/backend.ts": 'import { store } from "./file/store";\nexport const backend = store;\n',
      "provider/client/fence.ts": 'import { session } from "../backends/postgres/session";\nexport const fence = session;\n',
      // the testing entry reaching past the public entries; the product importing the testing entry
      "testing/stack.ts": 'import { internal } from "../provider/automation/engine/open-stack";\nexport const stack = internal;\n',
      "fake-server/journal.ts": 'import { stack } from "../testing/stack";\nexport const journal = stack;\n',
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    const violations = cruise(dir, ["provider", "fake-server", "testing", "bench"]);
    const fired = new Set(violations.map((v) => v.rule.name));
    // The setup module itself may load the SDK (dynamically too); a library module may not.
    expect(violations.filter((v) => v.rule.name === "otel-sdk-only-in-setup").map((v) => v.from)).toEqual(["provider/client/otel.ts"]);
    for (const rule of [
      "layer-wire",
      "layer-backends",
      "backends-through-registry",
      "backends-adapters-apart",
      "backends-interface-below-adapters",
      "no-cycles",
      "automation-model",
      "automation-folder-through-index",
      "automation-subfolder-through-index",
      "automation-entry-points-only",
      "fake-server-shares-only-wire",
      "tools-not-from-tests",
      "otel-sdk-only-in-setup",
      "cli-output-through-index",
      "testing-through-entries",
      "product-not-from-testing",
    ]) {
      expect(fired, rule).toContain(rule);
    }
    // The cycle among the benches is found as well as the one in the client.
    expect(violations.filter((v) => v.rule.name === "no-cycles").map((v) => v.from.split("/")[0])).toEqual(expect.arrayContaining(["provider", "bench"]));
  });
});
