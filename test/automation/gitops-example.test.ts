// examples/gitops: the workflow's own `run:` lines, executed as written, against
// the fake server, the way the pull-request, main-branch and nightly jobs run
// them: each job in a fresh copy of the repository, with exactly the environment
// the workflow gives that job (its secrets, nothing inherited), one shared backend.
import { execFile } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { UserGroupsClient } from "../../provider/client/http-client";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

const EXAMPLE = path.join(REPO_ROOT, "examples/gitops");
const SECRETS: Record<string, string> = {
  PULUMI_CONFIG_PASSPHRASE: "gitops-state-passphrase",
  USER_GROUPS_API_KEY: "gitops-customer-rw-key-00001",
  USER_GROUPS_API_KEY_TESTING: "gitops-testing-rw-key-000002",
  USER_GROUPS_READONLY_API_KEY: "gitops-customer-ro-key-00003",
  USER_GROUPS_READONLY_API_KEY_TESTING: "gitops-testing-ro-key-000004",
};
const PR_NUMBER = "42";

type Env = Record<string, string>;
interface Step {
  run?: string;
  env?: Env;
}
interface Workflow {
  env?: Env;
  permissions?: unknown;
  jobs: Record<string, { env?: Env; permissions?: Record<string, string>; steps: Step[] }>;
}

const workflow = yaml.load(readFileSync(path.join(EXAMPLE, "user-groups.yml"), "utf8")) as Workflow;

let server: FakeServer;
let env: PulumiTestEnv;
let binDir: string;
let jobs = 0;

/** GitHub's `${{ ... }}` for the contexts the workflow uses; anything else fails the test. A missing secret is "", as on GitHub. */
function evaluate(value: string, vars: Env): string {
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_all, expression: string) => {
    const [context, name] = expression.split(/\.(.*)/s);
    if (context === "secrets") return SECRETS[name!] ?? "";
    if (context === "vars") return vars[name!] ?? "";
    if (expression === "github.token") return "github-token-for-the-job";
    if (expression === "github.event.pull_request.number") return PR_NUMBER;
    throw new Error(`the test does not know the expression ${expression}`);
  });
}

function evaluated(values: Env | undefined, vars: Env): Env {
  return Object.fromEntries(Object.entries(values ?? {}).map(([k, v]) => [k, evaluate(String(v), vars)]));
}

interface JobRun {
  code: number;
  output: string;
  checkout: string;
  stepSummary: string;
  /** What environment each step ran with (for the least-privilege checks). */
  stepEnvs: Env[];
}

/** One job: a fresh copy of the repository, then each `run:` line (npm ci is what the shim on PATH stands for). */
async function runJob(job: string): Promise<JobRun> {
  const spec = workflow.jobs[job];
  if (!spec) throw new Error(`no job ${job}`);
  const checkout = path.join(env.workDir, "..", "checkouts", `${job}-${++jobs}`);
  mkdirSync(path.dirname(checkout), { recursive: true });
  cpSync(EXAMPLE, checkout, { recursive: true });
  const stepSummary = path.join(checkout, "..", `${job}-${jobs}-summary.md`);
  const vars = { PULUMI_BACKEND_URL: `file://${env.backendDir}`, USER_GROUPS_BASE_URL: server.url };
  // What a runner provides (setup-node's node first on PATH), and nothing of this process's environment.
  const runner: Env = {
    PATH: [binDir, path.dirname(process.execPath), env.binDir, "/usr/bin", "/bin"].join(path.delimiter),
    HOME: env.envVars.PULUMI_HOME!,
    PULUMI_HOME: env.envVars.PULUMI_HOME!,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    GITHUB_STEP_SUMMARY: stepSummary,
    GITHUB_PATH: path.join(checkout, "..", `${job}-${jobs}-path`),
  };
  const result: JobRun = { code: 0, output: "", checkout, stepSummary, stepEnvs: [] };
  for (const step of spec.steps) {
    if (step.run === undefined || step.run.startsWith("npm ci")) continue;
    const stepEnv = { ...runner, ...evaluated(workflow.env, vars), ...evaluated(spec.env, vars), ...evaluated(step.env, vars) };
    result.stepEnvs.push(stepEnv);
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile("bash", ["-e", "-c", step.run!], { cwd: checkout, env: stepEnv }, (error, out, err) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout: out, stderr: err }),
      );
    });
    result.output += stdout + stderr;
    if (code !== 0) return { ...result, code };
  }
  return result;
}

beforeAll(async () => {
  server = await startFakeServer({
    apiKeys: [
      { key: SECRETS.USER_GROUPS_API_KEY!, environment: "Customer" },
      { key: SECRETS.USER_GROUPS_API_KEY_TESTING!, environment: "Testing" },
      { key: SECRETS.USER_GROUPS_READONLY_API_KEY!, environment: "Customer", readOnly: true },
      { key: SECRETS.USER_GROUPS_READONLY_API_KEY_TESTING!, environment: "Testing", readOnly: true },
    ],
  });
  env = createPulumiTestEnv("gitops");
  // What `npm ci` + $GITHUB_PATH give the workflow: the package's command on PATH; and a
  // `gh` that records the comment it would post.
  binDir = path.join(env.workDir, "..", "bin");
  mkdirSync(binDir, { recursive: true });
  const shim = path.join(binDir, "user-groups");
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${USER_GROUPS_CLI}" "$@"\n`);
  const gh = path.join(binDir, "gh");
  writeFileSync(gh, `#!/bin/sh\n# gh pr comment NUMBER --body-file FILE\nprintf '%s\\n' "$@" > gh-args.txt\ncp "$5" gh-comment.md\n`);
  chmodSync(shim, 0o755);
  chmodSync(gh, 0o755);
});

afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

const apiKeys = Object.entries(SECRETS).filter(([name]) => name !== "PULUMI_CONFIG_PASSPHRASE");

describe("examples/gitops workflow", () => {
  it("gives each job only the secrets it needs: the pull request no API key, drift read-only keys, apply read-write ones", () => {
    const secretsOf = (job: string) => [...JSON.stringify(workflow.jobs[job]).matchAll(/secrets\.(\w+)/g)].map((m) => m[1]).sort();
    expect(JSON.stringify(workflow.env)).not.toMatch(/secrets\./);
    expect(secretsOf("preview")).toEqual(["PULUMI_CONFIG_PASSPHRASE"]);
    expect(secretsOf("drift")).toEqual(["PULUMI_CONFIG_PASSPHRASE", "USER_GROUPS_READONLY_API_KEY", "USER_GROUPS_READONLY_API_KEY_TESTING"]);
    expect(secretsOf("apply")).toEqual(["PULUMI_CONFIG_PASSPHRASE", "USER_GROUPS_API_KEY", "USER_GROUPS_API_KEY_TESTING"]);
    expect(workflow.permissions).toEqual({});
    expect(workflow.jobs.preview?.permissions).toEqual({ contents: "read", "pull-requests": "write" });
  });

  it("previews a pull request with no API key, and posts the summary to it", async () => {
    const preview = await runJob("preview");
    expect(preview.code, preview.output).toBe(0);
    for (const stepEnv of preview.stepEnvs) for (const [, key] of apiKeys) expect(Object.values(stepEnv)).not.toContain(key);
    expect(preview.output).toMatch(/3 create/);
    expect(server.groups()).toEqual([]);
    expect(server.journal()).toEqual([]);
    const comment = readFileSync(path.join(preview.checkout, "gh-comment.md"), "utf8");
    expect(readFileSync(path.join(preview.checkout, "gh-args.txt"), "utf8").split("\n").slice(0, 3)).toEqual(["pr", "comment", PR_NUMBER]);
    expect(comment).toContain("**3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged**");
    expect(comment).toContain("| default.acme | create | new group |");
    expect(readFileSync(preview.stepSummary, "utf8")).toBe(comment);
  });

  it("applies on the main branch, in a fresh copy of the repository", async () => {
    const apply = await runJob("apply");
    expect(apply.code, apply.output).toBe(0);
    expect(server.groups().map((g) => `${g.environment}/${g.user_group_id}`).sort()).toEqual(["Customer/acme", "Customer/globex", "Testing/acme"]);
    expect(readFileSync(apply.stepSummary, "utf8")).toContain("### user-groups: Applied of stack `prod`");
  });

  it("passes the nightly drift check with read-only keys, fails it after an out-of-band delete, and apply heals", async () => {
    const mark = server.journal().length;
    const clean = await runJob("drift");
    expect(clean.code, clean.output).toBe(0);
    expect(clean.output).toMatch(/in sync \(3 groups read, nothing changed\)/);
    // Read-only keys: every PUT refused, nothing written.
    expect(server.journal().slice(mark).every((e) => e.method === "GET" || (e.method === "PUT" && e.status === 403))).toBe(true);

    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: SECRETS.USER_GROUPS_API_KEY! });
    await operator.delete({ current_token: server.groups().find((g) => g.user_group_id === "globex")!.token });
    await operator.close();

    const drift = await runJob("drift");
    expect(drift.code).toBe(3);
    expect(drift.output).toMatch(/default\.globex\s+deleted/);
    expect(readFileSync(drift.stepSummary, "utf8")).toContain("| default.globex | deleted |");

    const heal = await runJob("apply");
    expect(heal.code, heal.output).toBe(0);
    expect(server.groups().filter((g) => g.user_group_id === "globex")).toHaveLength(1);
    expect((await runJob("drift")).code).toBe(0);
  });

  it("never prints or posts a token or an API key", async () => {
    const preview = await runJob("preview");
    const all = [preview.output, readFileSync(path.join(preview.checkout, "gh-comment.md"), "utf8"), existsSync(preview.stepSummary) ? readFileSync(preview.stepSummary, "utf8") : ""].join("\n");
    for (const [, key] of apiKeys) expect(all).not.toContain(key);
    expect(all).not.toMatch(/\b[0-9a-f]{64}\b/);
  });
});
