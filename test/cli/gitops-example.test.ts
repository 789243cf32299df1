// examples/gitops: the workflow's own `run:` lines (and its github-script step),
// executed as written, against the fake server, the way the pull-request,
// main-branch and nightly jobs run them: each job in a fresh copy of the
// repository, with exactly the environment the workflow gives that job (its
// secrets, nothing inherited; none for a fork's pull request), one shared
// backend, the pull request's comments kept in a file. And the workflow as a
// team would adopt it: actionlint (with shellcheck) and zizmor find nothing.
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { REPO_ROOT } from "../support/pulumi-env";
import { useStackFixture } from "../support/stack-fixture";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

const GITHUB_SCRIPT_RUNNER = path.join(REPO_ROOT, "test/support/github-script-runner.cjs");

const EXAMPLE = path.join(REPO_ROOT, "examples/gitops");
const SECRETS: Record<string, string> = {
  PULUMI_CONFIG_PASSPHRASE: "gitops-state-passphrase",
  USER_GROUPS_API_KEY: "gitops-customer-rw-key-00001",
  USER_GROUPS_API_KEY_TESTING: "gitops-testing-rw-key-000002",
  USER_GROUPS_READONLY_API_KEY: "gitops-customer-ro-key-00003",
  USER_GROUPS_READONLY_API_KEY_TESTING: "gitops-testing-ro-key-000004",
};
const PR_NUMBER = "42";
const REPOSITORY = "acme/groups";

type Env = Record<string, string>;
interface Step {
  name?: string;
  if?: string;
  uses?: string;
  run?: string;
  env?: Env;
  with?: Record<string, unknown>;
}
interface Job {
  if?: string;
  environment?: string;
  concurrency?: { group: string; "cancel-in-progress": boolean };
  env?: Env;
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, { paths?: string[]; branches?: string[] } | unknown>;
  env?: Env;
  permissions?: unknown;
  jobs: Record<string, Job>;
}

const workflowText = readFileSync(path.join(EXAMPLE, "user-groups.yml"), "utf8");
const workflow = yaml.load(workflowText) as Workflow;

const { server, env } = useStackFixture({
  label: "gitops",
  apiKeys: [
    { key: SECRETS.USER_GROUPS_API_KEY!, environment: "Customer" },
    { key: SECRETS.USER_GROUPS_API_KEY_TESTING!, environment: "Testing" },
    { key: SECRETS.USER_GROUPS_READONLY_API_KEY!, environment: "Customer", readOnly: true },
    { key: SECRETS.USER_GROUPS_READONLY_API_KEY_TESTING!, environment: "Testing", readOnly: true },
  ],
});
let binDir: string;
let commentsStore: string;
let jobs = 0;

/** Who opened the pull request, and what GitHub gives its jobs. */
interface JobContext {
  /** A pull request from a fork: GitHub passes it no secrets. */
  readonly fork?: boolean;
  readonly secrets?: Record<string, string>;
  /** A push to main that no pull request merged (the apply job finds no reviewed plan). */
  readonly noPullRequest?: boolean;
}

/** GitHub's `${{ ... }}` for the contexts the workflow uses; anything else fails the test. A missing secret is "", as on GitHub. */
function evaluate(value: string, vars: Env, context: JobContext): string {
  const secrets = context.fork ? {} : { ...SECRETS, ...context.secrets };
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_all, expression: string) => {
    const [name, field] = expression.split(/\.(.*)/s);
    if (name === "secrets") return secrets[field!] ?? "";
    if (name === "vars") return vars[field!] ?? "";
    const known: Record<string, string> = {
      "github.token": "github-token-for-the-job",
      "github.event.pull_request.number": PR_NUMBER,
      "github.event.pull_request.head.repo.full_name != github.repository": String(context.fork === true),
      "github.server_url": "https://github.com",
      "github.repository": REPOSITORY,
      "github.run_id": "1234",
    };
    if (known[expression] !== undefined) return known[expression]!;
    throw new Error(`the test does not know the expression ${expression}`);
  });
}

function evaluated(values: Env | undefined, vars: Env, context: JobContext): Env {
  return Object.fromEntries(Object.entries(values ?? {}).map(([k, v]) => [k, evaluate(String(v), vars, context)]));
}

/** Whether a step runs after an earlier one failed: only with `!cancelled()` (or always()). Any other condition fails the test. */
function runsAfterFailure(condition: string | undefined): boolean {
  if (condition === undefined) return false;
  if (/^\$\{\{\s*(!cancelled\(\)|always\(\))\s*\}\}$/.test(condition)) return true;
  throw new Error(`the test does not know the step condition ${condition}`);
}

interface JobRun {
  code: number;
  output: string;
  checkout: string;
  stepSummary: string;
  /** What environment each step ran with (for the least-privilege checks). */
  stepEnvs: Env[];
}

function exec(command: string, args: string[], cwd: string, stepEnv: Env): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: stepEnv }, (error, out, err) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: out + err }));
  });
}

/** One job: a fresh copy of the repository, then each `run:` line (npm ci is what the shim on PATH stands for) and github-script step. */
async function runJob(job: string, context: JobContext = {}, edit?: (checkout: string) => void): Promise<JobRun> {
  const spec = workflow.jobs[job];
  if (!spec) throw new Error(`no job ${job}`);
  const checkout = path.join(env.workDir, "..", "checkouts", `${job}-${++jobs}`);
  mkdirSync(path.dirname(checkout), { recursive: true });
  cpSync(EXAMPLE, checkout, { recursive: true });
  edit?.(checkout);
  const stepSummary = path.join(checkout, "..", `${job}-${jobs}-summary.md`);
  const runnerTemp = path.join(checkout, "..", `${job}-${jobs}-runner-temp`);
  mkdirSync(runnerTemp);
  const vars = { PULUMI_BACKEND_URL: `file://${env.backendDir}`, USER_GROUPS_BASE_URL: server.url };
  // What a runner provides (setup-node's node first on PATH), and nothing of this process's environment.
  const runner: Env = {
    PATH: [binDir, path.dirname(process.execPath), env.binDir, "/usr/bin", "/bin"].join(path.delimiter),
    HOME: env.envVars.PULUMI_HOME!,
    PULUMI_HOME: env.envVars.PULUMI_HOME!,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    GITHUB_STEP_SUMMARY: stepSummary,
    GITHUB_PATH: path.join(checkout, "..", `${job}-${jobs}-path`),
    GITHUB_REPOSITORY: REPOSITORY,
    RUNNER_TEMP: runnerTemp,
  };
  const result: JobRun = { code: 0, output: "", checkout, stepSummary, stepEnvs: [] };
  for (const step of spec.steps) {
    if (result.code !== 0 && !runsAfterFailure(step.if)) continue;
    if (result.code === 0 && step.if !== undefined) runsAfterFailure(step.if); // a condition the test knows
    const script = step.uses?.startsWith("actions/github-script@") ? String(step.with?.script) : undefined;
    if (script === undefined && (step.run === undefined || step.run.startsWith("npm ci"))) continue;
    const stepEnv = { ...runner, ...evaluated(workflow.env, vars, context), ...evaluated(spec.env, vars, context), ...evaluated(step.env, vars, context) };
    result.stepEnvs.push(stepEnv);
    let ran: { code: number; output: string };
    if (script !== undefined) {
      const scriptFile = path.join(runnerTemp, `github-script-${result.stepEnvs.length}.js`);
      writeFileSync(scriptFile, script);
      // As the action: its token, and PR_NUMBER only to tell the runner which pull request it is.
      // A push's commit: the pull request it came from is merged (unless the test says no pull request merged it).
      const pushed = { GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567", ...(context.noPullRequest ? {} : { MERGED_PR: PR_NUMBER }) };
      ran = await exec(process.execPath, [GITHUB_SCRIPT_RUNNER, scriptFile, commentsStore], checkout, { ...stepEnv, ...pushed, PR_NUMBER, GITHUB_TOKEN: evaluate("${{ github.token }}", vars, context) });
    } else {
      ran = await exec("bash", ["-e", "-c", step.run!], checkout, stepEnv);
    }
    result.output += ran.output;
    if (ran.code !== 0 && result.code === 0) result.code = ran.code;
  }
  return result;
}

interface Comment {
  id: number;
  issue_number: number;
  user: { login: string };
  body: string;
}

function comments(): Comment[] {
  return existsSync(commentsStore) ? (JSON.parse(readFileSync(commentsStore, "utf8")) as { comments: Comment[] }).comments : [];
}

const MARKER = "<!-- user-groups-preview -->";
const botComments = () => comments().filter((c) => c.user.login === "github-actions[bot]" && c.body.startsWith(MARKER));

beforeAll(async () => {
  // What `npm ci` + $GITHUB_PATH give the workflow: the package's command on PATH.
  binDir = path.join(env.workDir, "..", "bin");
  mkdirSync(binDir, { recursive: true });
  const shim = path.join(binDir, "user-groups");
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${USER_GROUPS_CLI}" "$@"\n`);
  chmodSync(shim, 0o755);
  // The pull request already has a long discussion: 150 comments by people, one of them quoting the marker.
  commentsStore = path.join(env.workDir, "..", "pull-request-comments.json");
  const human = (id: number, body: string): Comment => ({ id, issue_number: Number(PR_NUMBER), user: { login: "reviewer" }, body });
  writeFileSync(commentsStore, JSON.stringify({ nextId: 151, comments: Array.from({ length: 150 }, (_, i) => human(i + 1, i === 7 ? `${MARKER} quoted by a person` : `comment ${i + 1}`)) }));
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
    expect(workflow.jobs.apply?.permissions).toEqual({ contents: "read", "pull-requests": "read" });
    expect(workflow.jobs.heal?.permissions).toEqual({ contents: "read" });
    expect(workflow.jobs.heal?.environment).toBe("production");
    expect(workflow.jobs.drift?.permissions).toEqual({ contents: "read" });
    // The read-write keys only behind an environment (its protection rules and secrets).
    expect(workflow.jobs.apply?.environment).toBe("production");
  });

  it("can be copied as is: its own concurrency per job, actions pinned by commit, a pinned Pulumi CLI, no credentials or install scripts left to PR code", () => {
    const { preview, apply, drift } = workflow.jobs;
    // Previews of one pull request cancel each other; an apply is never cancelled, and shares no group with a preview or drift.
    expect(preview?.concurrency).toEqual({ group: "user-groups-preview-${{ github.event.pull_request.number }}", "cancel-in-progress": true });
    expect(apply?.concurrency).toEqual({ group: "user-groups-apply-prod", "cancel-in-progress": false });
    expect(drift?.concurrency?.["cancel-in-progress"]).toBe(false);
    expect(new Set([preview, apply, drift].map((j) => j?.concurrency?.group)).size).toBe(3);
    expect((workflow as { concurrency?: unknown }).concurrency).toBeUndefined();
    for (const [name, job] of Object.entries(workflow.jobs)) {
      const uses = job.steps.filter((step) => step.uses !== undefined);
      // Every action by a full commit SHA, its release named beside it.
      for (const step of uses) expect(step.uses, name).toMatch(/^[\w-]+\/[\w-]+@[0-9a-f]{40}$/);
      expect(workflowText).not.toMatch(/uses: [^\n]*@v\d/);
      for (const step of uses.filter((s) => s.uses!.startsWith("actions/checkout@"))) expect(step.with).toEqual({ "persist-credentials": false });
      // The Pulumi CLI installed by the job, at the engine version the lockfile pins (package.json has a range).
      const pulumi = uses.find((s) => s.uses!.startsWith("pulumi/actions@"));
      const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
      expect(pulumi?.with, name).toEqual({ "pulumi-version": lock.packages["node_modules/@pulumi/pulumi"]!.version });
      for (const step of job.steps.filter((s) => s.run?.includes("npm ci"))) expect(step.run, name).toMatch(/^npm ci --ignore-scripts /);
    }
    expect(workflowText.match(/uses: \S+@[0-9a-f]{40} # v\d+\.\d+\.\d+\n/g)).toHaveLength(14);
    // Everything that changes what is applied triggers the preview and the apply.
    const paths = ["groups.yaml", ".user-groups/**", "package.json", "package-lock.json", ".github/workflows/user-groups.yml"];
    expect((workflow.on.pull_request as { paths: string[] }).paths).toEqual(paths);
    expect((workflow.on.push as { paths: string[] }).paths).toEqual(paths);
  });

  it("previews a pull request with no API key, and posts the summary as one comment, updated on the next push", async () => {
    const preview = await runJob("preview");
    expect(preview.code, preview.output).toBe(0);
    for (const stepEnv of preview.stepEnvs) for (const [, key] of apiKeys) expect(Object.values(stepEnv)).not.toContain(key);
    expect(preview.output).toMatch(/3 to create/);
    expect(server.groups()).toEqual([]);
    expect(server.journal()).toEqual([]);
    const [comment, ...more] = botComments();
    expect(more).toEqual([]);
    expect(comment!.body).toContain("**3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged**");
    expect(comment!.body).toContain('| default.acme | create | new group; name: "Acme Corp"; userGroupId: "acme"; mapping.sales: "warehouse-eu"; properties.plan: "enterprise"; properties.region: "eu" |');
    // The summary, and the plan it showed (base64 in an HTML comment) for the apply on merge.
    expect(comment!.body).toMatch(/\n<!-- user-groups-plan:[A-Za-z0-9+/=]+ -->\n$/);
    expect(comment!.body.replace(/\n<!-- user-groups-plan:[A-Za-z0-9+/=]+ -->\n$/, "")).toBe(`${MARKER}\n${readFileSync(preview.stepSummary, "utf8")}`);

    // The next push: the same comment, now saying what this push would do.
    const again = await runJob("preview", {}, (checkout) =>
      writeFileSync(path.join(checkout, "groups.yaml"), `${readFileSync(path.join(checkout, "groups.yaml"), "utf8")}  - { name: Initech, userGroupId: initech }\n`),
    );
    expect(again.code, again.output).toBe(0);
    expect(botComments().map((c) => c.id)).toEqual([comment!.id]);
    expect(botComments()[0]!.body).toContain("**4 to create,");
    // People's comments are never touched, even one that quotes the marker.
    expect(comments().filter((c) => c.user.login === "reviewer")).toHaveLength(150);
    expect(comments().find((c) => c.id === 8)!.body).toBe(`${MARKER} quoted by a person`);
  });

  it("a pull request from a fork: no secrets, the groups file validated, the preview skipped with a notice", async () => {
    const before = comments();
    const fork = await runJob("preview", { fork: true });
    expect(fork.code, fork.output).toBe(0);
    for (const stepEnv of fork.stepEnvs) for (const secret of Object.values(SECRETS)) expect(Object.values(stepEnv)).not.toContain(secret);
    expect(fork.output).toMatch(/groups\.yaml: 3 groups, valid/);
    expect(fork.output).toMatch(/::notice title=user-groups::Preview skipped: a pull request from a fork gets no secrets/);
    expect(comments()).toEqual(before);
  });

  it("refuses to apply a merge when no pull request's preview was reviewed, or main moved after it: nothing changes", async () => {
    // The pull request's last push was previewed as it is now (the example's three groups).
    expect((await runJob("preview")).code).toBe(0);
    const direct = await runJob("apply", { noPullRequest: true });
    expect(direct.code).toBe(1);
    expect(direct.output).toMatch(/did not come from a merged pull request, so no preview was reviewed: nothing was applied/);
    // Main moved before the merge: another commit added Hooli.
    const moved = await runJob("apply", {}, (checkout) =>
      writeFileSync(path.join(checkout, "groups.yaml"), `${readFileSync(path.join(checkout, "groups.yaml"), "utf8")}  - { name: Hooli, userGroupId: hooli }\n`),
    );
    expect(moved.code).toBe(2);
    expect(moved.output).toMatch(/default\.hooli: reviewed: no change; now: create/);
    expect(server.groups()).toEqual([]);
  });

  it("applies on the main branch, in a fresh copy of the repository", async () => {
    const apply = await runJob("apply");
    expect(apply.code, apply.output).toBe(0);
    expect(server.groups().map((g) => `${g.environment}/${g.user_group_id}`).sort()).toEqual(["Customer/acme", "Customer/globex", "Testing/acme"]);
    expect(readFileSync(apply.stepSummary, "utf8")).toContain("### user-groups: Applied to stack `prod`");
  });

  it("says so on the pull request when the preview fails (the job fails too)", async () => {
    // The stack holds secrets now (the tokens): another passphrase cannot open it.
    const failed = await runJob("preview", { secrets: { PULUMI_CONFIG_PASSPHRASE: "not-the-passphrase-of-the-stack" } });
    expect(failed.code).toBe(1);
    expect(failed.output).toMatch(/The passphrase does not decrypt the secrets of stack "prod"/);
    expect(botComments()).toHaveLength(1);
    expect(botComments()[0]!.body).toBe(`${MARKER}\n### user-groups: preview failed\n\nNothing was previewed; see [the job log](https://github.com/acme/groups/actions/runs/1234).\n`);
  });

  it("passes the nightly drift check with read-only keys, fails it after an out-of-band delete, and the heal a person starts heals", async () => {
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

    const heal = await runJob("heal");
    expect(heal.code, heal.output).toBe(0);
    expect(server.groups().filter((g) => g.user_group_id === "globex")).toHaveLength(1);
    expect((await runJob("drift")).code).toBe(0);
  });

  it("never prints or posts a token or an API key", async () => {
    const preview = await runJob("preview");
    const all = [preview.output, ...comments().map((c) => c.body), existsSync(preview.stepSummary) ? readFileSync(preview.stepSummary, "utf8") : ""].join("\n");
    for (const [, key] of apiKeys) expect(all).not.toContain(key);
    expect(all).not.toMatch(/\b[0-9a-f]{64}\b/);
  });
});

describe("examples/gitops workflow under the linters", () => {
  it(
    "actionlint (with shellcheck on every run: script) and zizmor (offline) find nothing",
    () => {
      // Built from the Go module proxy and PyPI once, cached under ~/.cache/pulumi-user-groups/.
      const tools = Object.fromEntries(
        execFileSync(path.join(REPO_ROOT, "scripts/ensure-workflow-linters"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
          .trim()
          .split("\n")
          .map((line) => line.split(" ") as [string, string]),
      );
      const file = path.join(EXAMPLE, "user-groups.yml");
      const lint = (command: string, args: string[]) => {
        // No GitHub token: zizmor stays offline; no inherited config.
        const { GH_TOKEN: _gh, GITHUB_TOKEN: _github, ...quiet } = process.env;
        try {
          return { code: 0, output: execFileSync(command, args, { encoding: "utf8", env: quiet, stdio: ["ignore", "pipe", "pipe"] }) };
        } catch (error) {
          const failed = error as { status?: number; stdout?: string; stderr?: string };
          return { code: failed.status ?? 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
        }
      };
      const actionlint = lint(tools.actionlint!, ["-shellcheck", tools.shellcheck!, "-no-color", file]);
      expect(actionlint, actionlint.output).toEqual({ code: 0, output: "" });
      const zizmor = lint(tools.zizmor!, ["--offline", "--no-config", "--format", "json", file]);
      expect(zizmor.code, zizmor.output).toBe(0);
      expect(JSON.parse(zizmor.output)).toEqual([]);
    },
    15 * 60_000,
  );
});
