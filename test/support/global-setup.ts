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
}

declare module "vitest" {
  export interface ProvidedContext {
    pulumiBinDir: string;
  }
}
