// The foundation works: the pinned engine runs a real up / preview / destroy
// of a dynamic resource through the Automation API, offline, on a file backend.
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
import * as pulumi from "@pulumi/pulumi";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pulumiCommandOnPath } from "../../provider/automation/engine/pulumi-cli";
import { createPulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";

// package.json carries a range; the lockfile pins the version the engine is built at.
const pinned = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string }>;
}).packages["node_modules/@pulumi/pulumi"]?.version;

describe("the Pulumi engine", () => {
  const env = createPulumiTestEnv("smoke");
  afterAll(() => env.cleanup());

  it("is the pinned version", async () => {
    const cmd = await PulumiCommand.get({ root: path.dirname(env.binDir) });
    console.log(`pulumi engine: v${cmd.version?.toString()} (pinned @pulumi/pulumi ${pinned})`);
    expect(cmd.version?.toString()).toBe(pinned);
  });

  it("runs up, an empty preview and destroy of a dynamic resource", async () => {
    const program = async () => {
      const provider: pulumi.dynamic.ResourceProvider = {
        async create(inputs: { greeting: string }) {
          return { id: `smoke-${inputs.greeting}`, outs: { greeting: inputs.greeting, length: inputs.greeting.length } };
        },
      };
      class Smoke extends pulumi.dynamic.Resource {
        declare readonly length: pulumi.Output<number>;
        constructor(name: string) {
          super(provider, name, { greeting: "hello", length: undefined });
        }
      }
      const resource = new Smoke("smoke");
      return { id: resource.id, length: resource.length };
    };
    // The env's backend is its own and empty: the stack is created at once (a select first would only fail), with the
    // engine's version as the product knows it (the test above asks the engine itself).
    const stack = await LocalWorkspace.createStack(
      { stackName: "smoke", projectName: "smoke", program },
      { workDir: env.workDir, envVars: env.envVars, pulumiCommand: await pulumiCommandOnPath(env.envVars) },
    );
    const up = await stack.up();
    expect(up.summary.resourceChanges).toMatchObject({ create: 2 });
    expect(up.outputs.id?.value).toBe("smoke-hello");
    expect(up.outputs.length?.value).toBe(5);

    const preview = await stack.preview({ expectNoChanges: true });
    expect(preview.changeSummary).toEqual({ same: 2 });

    const destroy = await stack.destroy();
    expect(destroy.summary.resourceChanges).toMatchObject({ delete: 2 });
    // The state as the backend stores it (a `stack export` reads the same file through one more engine process).
    const stored = JSON.parse(readFileSync(path.join(env.backendDir, ".pulumi/stacks/smoke/smoke.json"), "utf8")) as {
      checkpoint: { latest?: { resources?: unknown[] } };
    };
    expect(stored.checkpoint.latest).toBeDefined();
    expect(stored.checkpoint.latest?.resources ?? []).toHaveLength(0);
  });
});
