// The engine tier's global setup (vitest.config.mts; the unit tier has none): makes
// the pinned Pulumi engine available to every engine-tier file: builds it on a cold
// machine (scripts/ensure-pulumi), then puts its bin directory first on PATH so the
// Automation API and the engine's plugin lookup both find it. Links the package into
// its own node_modules first (scripts/link-self.js): the examples and the engine
// tests' programs load it by name, also when vitest runs without `npm test`.
// Nothing else is built here: the tools a few files need (the YAML and SDK hosts:
// test/plugin/support.ts; the OpenTelemetry Collector: testkit/otel-collector.ts;
// PostgreSQL, Toxiproxy) are ensured by those files when they run, so a run of
// other files never waits for them.
import { execFileSync } from "node:child_process";
import path from "node:path";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject): void {
  const root = path.resolve(__dirname, "../..");
  execFileSync(process.execPath, [path.join(root, "scripts/link-self.js")], { stdio: "inherit" });
  const stdout = execFileSync(path.join(root, "scripts/ensure-pulumi"), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const binDir = stdout.trim().split("\n").at(-1) ?? "";
  if (!binDir) throw new Error("scripts/ensure-pulumi printed no bin directory");
  process.env.PATH = `${binDir}${path.delimiter}${process.env.PATH ?? ""}`;
  process.env.PULUMI_SKIP_UPDATE_CHECK = "true";
  project.provide("pulumiBinDir", binDir);
}

declare module "vitest" {
  export interface ProvidedContext {
    pulumiBinDir: string;
  }
}
