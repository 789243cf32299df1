// A state read in process takes the stack's file under the workspace's project name
// (engine/state/state-document.ts). That name becomes a folder of the backend's path, so
// a name Pulumi would not take ("..", a slash, too long) is not followed: the CLI reads.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { afterAll, describe, expect, it } from "vitest";
import { exportState } from "../../../provider/automation/engine/state/state-document";

const root = mkdtempSync(path.join(os.tmpdir(), "project-name-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const STACK = "dev";
/** A backend holding `checkpoint` at `.pulumi/<under>/dev.json`, and a stack whose workspace names `project`; its CLI answers `fromCli`. */
function stackOn(under: string, project: string, checkpointStack: string) {
  const backend = mkdtempSync(path.join(root, "backend-"));
  mkdirSync(path.join(backend, ".pulumi", under), { recursive: true });
  writeFileSync(path.join(backend, ".pulumi", "meta.yaml"), "version: 1\n");
  const planted = { manifest: { time: "2026-11-28T00:00:00Z", magic: "", version: "v3.259.0" }, resources: [{ urn: "planted", custom: false, type: "pulumi:pulumi:Stack" }] };
  writeFileSync(path.join(backend, ".pulumi", under, `${STACK}.json`), JSON.stringify({ version: 3, checkpoint: { stack: checkpointStack, latest: planted } }));
  const cliCalls: string[][] = [];
  const fromCli = { version: 3, deployment: { manifest: planted.manifest, resources: [{ urn: "from-the-cli", custom: false, type: "pulumi:pulumi:Stack" }] } };
  const workspace = {
    workDir: root,
    envVars: { PULUMI_BACKEND_URL: `file://${backend}` },
    projectSettings: async () => ({ name: project, runtime: "nodejs" }),
    pulumiCommand: { run: async (args: string[]) => (cliCalls.push(args), { stdout: JSON.stringify(fromCli) }) },
  };
  return { stack: { name: STACK, workspace } as unknown as Stack, cliCalls };
}

describe("the project name a state read follows", () => {
  it("reads a well-named project's stack from its file, with no CLI", async () => {
    const { stack, cliCalls } = stackOn("stacks/another-project", "another-project", `organization/another-project/${STACK}`);
    const read = (await exportState(stack)) as { deployment: { resources: Array<{ urn: string }> } };
    expect(read.deployment.resources[0]!.urn).toBe("planted");
    expect(cliCalls).toEqual([]);
  });

  it.each([
    ["..", "..", "organization/../dev"],
    [".", ".", "organization/./dev"],
    ["a slash", "stacks/../x", "organization/stacks/../x/dev"],
    ["over 100 characters", "p".repeat(101), `organization/${"p".repeat(101)}/dev`],
  ])("does not follow a project name of %s: the CLI reads the state", async (_, project, checkpointStack) => {
    // The file the name would lead to is planted, naming itself as the checkpoint of that very stack.
    const under = project.length > 100 ? `stacks/${project}` : path.posix.join("stacks", project);
    const { stack, cliCalls } = stackOn(under, project, checkpointStack);
    const read = (await exportState(stack)) as { deployment: { resources: Array<{ urn: string }> } };
    expect(read.deployment.resources[0]!.urn).toBe("from-the-cli");
    expect(cliCalls).toEqual([["stack", "export", "--stack", STACK]]);
  });
});
