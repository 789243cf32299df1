// Makes the pinned Pulumi engine available to every test file: builds it on a
// cold machine (scripts/ensure-pulumi), then puts its bin directory first on
// PATH so the Automation API and the engine's plugin lookup both find it. Links the
// package into its own node_modules first (scripts/link-self.js): the examples and the
// engine tests' programs load it by name, also when vitest runs without `npm test`.
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
  // The fake server is unthrottled unless a test says otherwise: no rate budget (180/60 by default) unless a test sets one.
  process.env.USER_GROUPS_RATE_LIMIT ??= "off";
  project.provide("pulumiBinDir", binDir);
  // Tools the plugin's tests (test/plugin) need, built once and cached like the engine.
  // A failure fails those tests (with this message), not the whole run.
  project.provide("pulumiYamlBinDir", ensureTool(root, "scripts/ensure-pulumi-yaml"));
  project.provide("sdkgenBinDir", ensureTool(root, "scripts/ensure-sdkgen-hosts"));
  // The OpenTelemetry Collector the observability tests export to (testkit/otel-collector.ts).
  project.provide("otelcolBinDir", ensureTool(root, "scripts/ensure-otelcol"));
}

/** The bin directory a scripts/ensure-* prints last, or "error: ..." when it could not be made. */
function ensureTool(root: string, script: string): string {
  try {
    const stdout = execFileSync(path.join(root, script), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    return stdout.trim().split("\n").at(-1) ?? "";
  } catch (error) {
    return `error: ${script} failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    pulumiBinDir: string;
    /** Where pulumi-language-yaml is (scripts/ensure-pulumi-yaml), or "error: ...". */
    pulumiYamlBinDir: string;
    /** Where the SDK-generating language hosts are (scripts/ensure-sdkgen-hosts), or "error: ...". */
    sdkgenBinDir: string;
    /** Where the OpenTelemetry Collector is (scripts/ensure-otelcol), or "error: ...". */
    otelcolBinDir: string;
  }
}
