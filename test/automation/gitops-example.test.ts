// examples/gitops: the workflow's own `run:` lines, executed as written, against
// the fake server, the way the pull-request, main-branch and nightly jobs run them.
import { execFile } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { UserGroupsClient } from "../../provider/client/http-client";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";

const EXAMPLE = path.join(REPO_ROOT, "examples/gitops");
const CUSTOMER_KEY = "gitops-customer-key-000001";
const TESTING_KEY = "gitops-testing-key-0000002";

interface Workflow {
  jobs: Record<string, { steps: Array<{ run?: string }> }>;
}

/** The job's user-groups commands, exactly as the workflow has them. */
function commandsOf(job: string): string[] {
  const workflow = yaml.load(readFileSync(path.join(EXAMPLE, "user-groups.yml"), "utf8")) as Workflow;
  return (workflow.jobs[job]?.steps ?? []).map((s) => s.run ?? "").filter((run) => run.startsWith("user-groups "));
}

let server: FakeServer;
let env: PulumiTestEnv;
let binDir: string;

function runStep(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-c", command],
      {
        cwd: env.workDir, // the checkout: groups.yaml at its root
        env: {
          ...process.env,
          ...env.envVars,
          PATH: `${binDir}${path.delimiter}${env.envVars.PATH}`,
          USER_GROUPS_BASE_URL: server.url,
          USER_GROUPS_API_KEY: CUSTOMER_KEY,
          USER_GROUPS_BASE_URL_TESTING: server.url,
          USER_GROUPS_API_KEY_TESTING: TESTING_KEY,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function runJob(job: string): Promise<{ code: number; output: string }> {
  const commands = commandsOf(job);
  expect(commands.length, `job ${job} runs user-groups`).toBeGreaterThan(0);
  let output = "";
  for (const command of commands) {
    const result = await runStep(command);
    output += result.stdout + result.stderr;
    if (result.code !== 0) return { code: result.code, output };
  }
  return { code: 0, output };
}

beforeAll(async () => {
  server = await startFakeServer({
    apiKeys: [
      { key: CUSTOMER_KEY, environment: "Customer" },
      { key: TESTING_KEY, environment: "Testing" },
    ],
  });
  env = createPulumiTestEnv("gitops");
  copyFileSync(path.join(EXAMPLE, "groups.yaml"), path.join(env.workDir, "groups.yaml"));
  // What `npm ci` + $GITHUB_PATH give the workflow: the package's command on PATH.
  binDir = path.join(env.workDir, "..", "bin");
  mkdirSync(binDir, { recursive: true });
  const shim = path.join(binDir, "user-groups");
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${path.join(REPO_ROOT, "dist/provider/cli/user-groups.js")}" "$@"\n`);
  chmodSync(shim, 0o755);
});

afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("examples/gitops workflow", () => {
  it("previews on a pull request without changing anything", async () => {
    const preview = await runJob("preview");
    expect(preview.code, preview.output).toBe(0);
    expect(preview.output).toMatch(/3 create/);
    expect(server.groups()).toEqual([]);
  });

  it("applies on the main branch", async () => {
    const apply = await runJob("apply");
    expect(apply.code, apply.output).toBe(0);
    expect(server.groups().map((g) => `${g.environment}/${g.user_group_id}`).sort()).toEqual(["Customer/acme", "Customer/globex", "Testing/acme"]);
  });

  it("passes the nightly drift check when nothing drifted, fails it after an out-of-band delete, and apply heals", async () => {
    const clean = await runJob("drift");
    expect(clean.code, clean.output).toBe(0);

    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: CUSTOMER_KEY });
    await operator.delete({ current_token: server.groups().find((g) => g.user_group_id === "globex")!.token });
    await operator.close();

    const drift = await runJob("drift");
    expect(drift.code).toBe(3);
    expect(drift.output).toMatch(/found changes in stack "prod"/);

    const heal = await runJob("apply");
    expect(heal.code, heal.output).toBe(0);
    expect(server.groups().filter((g) => g.user_group_id === "globex")).toHaveLength(1);
    expect((await runJob("drift")).code).toBe(0);
  });

  it("never prints a token or an API key", async () => {
    const all = (await runJob("preview")).output;
    expect(all).not.toContain(CUSTOMER_KEY);
    expect(all).not.toMatch(/\b[0-9a-f]{64}\b/);
  });
});
