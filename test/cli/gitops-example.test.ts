// examples/gitops: the workflow's own `run:` lines (and its github-script step),
// executed as written, against the fake server, the way the pull-request,
// main-branch and nightly jobs run them: each job in a fresh copy of the
// repository, with exactly the environment the workflow gives that job (its
// secrets, nothing inherited; none for a fork's pull request), one shared
// backend, the pull request's comments kept in a file. And the workflow as a
// team would adopt it: actionlint (with shellcheck) and zizmor find nothing.
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { type GroupSpec, resourceNameOf, type RunResult } from "../../provider/automation/internal";
import { withCreateDetails } from "../../provider/cli/output";
import { parseReviewedPlan, planFileText, plannedChangesOf, type PlanOrigin, type ReviewedPlan, reviewedPlanOf, reviewSummaryMarkdown } from "../../provider/cli/reviewed-plan";
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
/** The pull request's last commit (what its preview is of, and what its merge brings), and the merge commit on main. */
const PR_HEAD = "4d2c0ffee4d2c0ffee4d2c0ffee4d2c0ffee0042";
const MERGE_SHA = "0123456789abcdef0123456789abcdef01234567";
const WORKFLOW_ID = 77;

type Env = Record<string, string>;
interface Step {
  id?: string;
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
/** The repository on GitHub, as the github-script runner sees it: the pull request's comments, the workflow's runs and their artifacts. */
let commentsStore: string;
let artifactsDir: string;
let jobs = 0;

/** Who opened the pull request, and what GitHub gives its jobs. */
interface JobContext {
  /** A pull request from a fork: GitHub passes it no secrets. */
  readonly fork?: boolean;
  readonly secrets?: Record<string, string>;
  /** A push to main that no pull request merged (the apply job finds no reviewed plan). */
  readonly noPullRequest?: boolean;
  /** The pull request's head commit when this job runs (default PR_HEAD): a preview is of it, an apply merged it. */
  readonly head?: string;
  /** Added to what the runner provides (the emulator has no rate limit to pace for). */
  readonly runnerEnv?: Env;
}

/** What one job run has of its own: its run id, its $RUNNER_TEMP, its steps' outputs. */
interface RunScope {
  readonly runId: string;
  readonly runnerTemp: string;
  readonly outputs: Record<string, Record<string, string>>;
}

/** GitHub's `${{ ... }}` for the contexts the workflow uses; anything else fails the test. A missing secret or output is "", as on GitHub. */
function evaluate(value: string, vars: Env, context: JobContext, scope?: RunScope): string {
  const secrets = context.fork ? {} : { ...SECRETS, ...context.secrets };
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_all, expression: string) => {
    const [name, field] = expression.split(/\.(.*)/s);
    if (name === "secrets") return secrets[field!] ?? "";
    if (name === "vars") return vars[field!] ?? "";
    const output = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(expression);
    if (output !== null && scope !== undefined) return scope.outputs[output[1]!]?.[output[2]!] ?? "";
    const known: Record<string, string> = {
      "github.token": "github-token-for-the-job",
      "github.event.pull_request.number": PR_NUMBER,
      "github.event.pull_request.head.repo.full_name != github.repository": String(context.fork === true),
      "github.event.pull_request.head.sha": context.head ?? PR_HEAD,
      "github.server_url": "https://github.com",
      "github.repository": REPOSITORY,
      ...(scope !== undefined ? { "github.run_id": scope.runId, "runner.temp": scope.runnerTemp } : {}),
    };
    if (known[expression] !== undefined) return known[expression]!;
    throw new Error(`the test does not know the expression ${expression}`);
  });
}

function evaluated(values: Env | Record<string, unknown> | undefined, vars: Env, context: JobContext, scope?: RunScope): Env {
  return Object.fromEntries(Object.entries(values ?? {}).map(([k, v]) => [k, evaluate(String(v), vars, context, scope)]));
}

/** Whether a step runs: by default only while nothing failed; `!cancelled()` (or always()) also after a failure; `env.FROM_FORK != 'true'`. Any other condition fails the test. */
function stepRuns(condition: string | undefined, failed: boolean, env: Env): boolean {
  if (condition === undefined) return !failed;
  if (/^\$\{\{\s*(!cancelled\(\)|always\(\))\s*\}\}$/.test(condition)) return true;
  if (condition === "env.FROM_FORK != 'true'") return !failed && env.FROM_FORK !== "true";
  throw new Error(`the test does not know the step condition ${condition}`);
}

interface JobRun {
  code: number;
  output: string;
  checkout: string;
  stepSummary: string;
  /** What environment each step ran with (for the least-privilege checks). */
  stepEnvs: Env[];
  runId: string;
  runnerTemp: string;
}

interface Artifact {
  id: number;
  name: string;
  expired: boolean;
  workflow_run: { id: number; head_sha: string };
  /** Where the test keeps its content. */
  file: string;
}
interface GitHubStore {
  nextId: number;
  comments: Comment[];
  runs?: Record<string, { id: number; workflow_id: number; event: string; head_sha: string; html_url: string }>;
  artifacts?: Artifact[];
}
const readStore = (): GitHubStore => JSON.parse(readFileSync(commentsStore, "utf8")) as GitHubStore;
const writeStore = (store: GitHubStore) => writeFileSync(commentsStore, JSON.stringify(store, null, 2));

/** actions/upload-artifact: the file at `path` kept as this run's artifact `name` (a second one replaces the first, as `overwrite: true`). */
function uploadArtifact(inputs: Env, scope: RunScope, head: string): { code: number; output: string; artifactId?: string } {
  if (!existsSync(inputs.path!)) return inputs["if-no-files-found"] === "error" ? { code: 1, output: `No files were found with the provided path: ${inputs.path}. No artifacts will be uploaded.\n` } : { code: 0, output: "" };
  const store = readStore();
  const id = 9000 + (store.artifacts?.length ?? 0);
  const file = path.join(artifactsDir, String(id));
  copyFileSync(inputs.path!, file);
  const artifacts = (store.artifacts ?? []).filter((a) => !(a.workflow_run.id === Number(scope.runId) && a.name === inputs.name));
  artifacts.push({ id, name: inputs.name!, expired: false, workflow_run: { id: Number(scope.runId), head_sha: head }, file });
  writeStore({ ...store, artifacts });
  return { code: 0, output: `Artifact ${inputs.name} has been successfully uploaded! Artifact ID is ${id}\n`, artifactId: String(id) };
}

/** actions/download-artifact with run-id and github-token: the artifact `name` of that run, into `path`, or the action's failure. */
function downloadArtifact(inputs: Env, uploadedName: (name: string) => string): { code: number; output: string } {
  const artifact = readStore().artifacts?.find((a) => a.workflow_run.id === Number(inputs["run-id"]) && a.name === inputs.name && !a.expired);
  if (artifact === undefined) return { code: 1, output: `Unable to download artifact(s): Artifact not found for name: ${inputs.name}\n` };
  mkdirSync(inputs.path!, { recursive: true });
  copyFileSync(artifact.file, path.join(inputs.path!, uploadedName(inputs.name!)));
  return { code: 0, output: "" };
}

function exec(command: string, args: string[], cwd: string, stepEnv: Env): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: stepEnv }, (error, out, err) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: out + err }));
  });
}

/** The event that starts each job (what GitHub's API says of its run). */
const EVENT_OF: Record<string, string> = { preview: "pull_request", apply: "push", heal: "workflow_dispatch", drift: "schedule" };

/** One job: a fresh copy of the repository, then each `run:` line (npm ci is what the shim on PATH stands for), github-script step and artifact step. */
async function runJob(
  job: string,
  context: JobContext = {},
  edit?: (checkout: string) => void,
  /** Only the steps of these names (the others skipped), after `prepare` filled $RUNNER_TEMP: a step tried without an engine run. */
  part?: { only: readonly string[]; prepare?: (runnerTemp: string) => void },
): Promise<JobRun> {
  const spec = workflow.jobs[job];
  if (!spec) throw new Error(`no job ${job}`);
  const checkout = path.join(env.workDir, "..", "checkouts", `${job}-${++jobs}`);
  mkdirSync(path.dirname(checkout), { recursive: true });
  cpSync(EXAMPLE, checkout, { recursive: true });
  edit?.(checkout);
  const stepSummary = path.join(checkout, "..", `${job}-${jobs}-summary.md`);
  const runnerTemp = path.join(checkout, "..", `${job}-${jobs}-runner-temp`);
  mkdirSync(runnerTemp);
  part?.prepare?.(runnerTemp);
  // This run, as GitHub's API shows it: a preview is a pull-request run of the pull request's head commit.
  const scope: RunScope = { runId: String(1233 + jobs), runnerTemp, outputs: {} };
  const head = job === "preview" ? (context.head ?? PR_HEAD) : MERGE_SHA;
  const store = readStore();
  writeStore({ ...store, runs: { ...store.runs, [scope.runId]: { id: Number(scope.runId), workflow_id: WORKFLOW_ID, event: EVENT_OF[job]!, head_sha: head, html_url: `https://github.com/${REPOSITORY}/actions/runs/${scope.runId}` } } });
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
    GITHUB_RUN_ID: scope.runId,
    RUNNER_TEMP: runnerTemp,
    ...context.runnerEnv,
  };
  const result: JobRun = { code: 0, output: "", checkout, stepSummary, stepEnvs: [], runId: scope.runId, runnerTemp };
  const jobEnv = { ...evaluated(workflow.env, vars, context, scope), ...evaluated(spec.env, vars, context, scope) };
  for (const step of spec.steps) {
    if (!stepRuns(step.if, result.code !== 0, jobEnv)) continue;
    if (part !== undefined && !part.only.includes(step.name ?? "")) continue;
    const script = step.uses?.startsWith("actions/github-script@") ? String(step.with?.script) : undefined;
    const artifactStep = step.uses?.startsWith("actions/upload-artifact@") || step.uses?.startsWith("actions/download-artifact@");
    if (script === undefined && !artifactStep && (step.run === undefined || step.run.startsWith("npm ci"))) continue;
    const stepEnv = { ...runner, ...jobEnv, ...evaluated(step.env, vars, context, scope) };
    result.stepEnvs.push(stepEnv);
    let ran: { code: number; output: string };
    if (step.uses?.startsWith("actions/upload-artifact@")) {
      const uploaded = uploadArtifact(evaluated(step.with, vars, context, scope), scope, head);
      if (uploaded.artifactId !== undefined && step.id !== undefined) scope.outputs[step.id] = { "artifact-id": uploaded.artifactId };
      ran = uploaded;
    } else if (step.uses?.startsWith("actions/download-artifact@")) {
      const inputs = evaluated(step.with, vars, context, scope);
      // The token the action is given, exactly: the job's own.
      expect(inputs["github-token"]).toBe("github-token-for-the-job");
      // Where the preview job's upload step took the file from: the artifact holds that one file.
      const upload = workflow.jobs.preview!.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))!;
      ran = downloadArtifact(inputs, () => path.basename(String(upload.with?.path)));
    } else if (script !== undefined) {
      const scriptFile = path.join(runnerTemp, `github-script-${result.stepEnvs.length}.js`);
      const outputFile = path.join(runnerTemp, `github-output-${result.stepEnvs.length}`);
      writeFileSync(scriptFile, script);
      writeFileSync(outputFile, "");
      // As the action: its token, and PR_NUMBER only to tell the runner which pull request it is.
      // A push's commit: the pull request it came from is merged (unless the test says no pull request merged it).
      const pushed = { GITHUB_SHA: MERGE_SHA, MERGED_HEAD_SHA: context.head ?? PR_HEAD, ...(context.noPullRequest ? {} : { MERGED_PR: PR_NUMBER }) };
      ran = await exec(process.execPath, [GITHUB_SCRIPT_RUNNER, scriptFile, commentsStore], checkout, {
        ...stepEnv,
        ...pushed,
        PR_NUMBER,
        GITHUB_OUTPUT: outputFile,
        GITHUB_TOKEN: evaluate("${{ github.token }}", vars, context),
      });
      if (step.id !== undefined) {
        scope.outputs[step.id] = Object.fromEntries(readFileSync(outputFile, "utf8").split("\n").filter(Boolean).map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]));
      }
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
/** GitHub refuses a comment body over this many characters. */
const COMMENT_LIMIT = 65_536;

/** `n` new groups, each with a mapping and properties, as a groups file declares them. */
function newGroups(n: number): GroupSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `Customer ${String(i).padStart(4, "0")} Holding GmbH`,
    userGroupId: `customer-${String(i).padStart(4, "0")}`,
    mapping: { sales: "warehouse-eu", finance: `ledger-${i % 7}` },
    properties: { region: i % 2 ? "eu" : "us", plan: "enterprise", seats: 10 + i },
  }));
}

/** What `preview --summary-file --plan-file` writes for `n` new groups (the command's own pure functions, no engine). */
function previewFiles(specs: readonly GroupSpec[], origin: PlanOrigin): { summary: string; plan: string } {
  const groups = specs.map((spec) => ({ resourceName: resourceNameOf(spec), userGroupId: spec.userGroupId, change: "create" as const }));
  const result: RunResult = withCreateDetails(
    { operation: "preview", stack: "prod", backendUrl: "file:///state", changed: true, summary: { create: specs.length, update: 0, replace: 0, delete: 0, same: 3 }, groups },
    specs,
  );
  const plan = reviewedPlanOf("prod", plannedChangesOf(result, specs, resourceNameOf), origin);
  return { summary: reviewSummaryMarkdown(result, plan), plan: planFileText(plan) };
}

/** The plan a run kept as its artifact, checked as `up --plan-file` checks it. */
function planOf(runId: string): ReviewedPlan {
  const artifact = readStore().artifacts?.find((a) => a.workflow_run.id === Number(runId) && a.name === "user-groups-plan");
  expect(artifact, `run ${runId} kept no plan`).toBeDefined();
  const plan = parseReviewedPlan(readFileSync(artifact!.file, "utf8"));
  if (typeof plan === "string") throw new Error(`run ${runId}'s plan: ${plan}`);
  return plan;
}
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
  artifactsDir = path.join(env.workDir, "..", "artifacts");
  mkdirSync(artifactsDir, { recursive: true });
  writeFileSync(commentsStore, JSON.stringify({ nextId: 151, runs: {}, artifacts: [], comments: Array.from({ length: 150 }, (_, i) => human(i + 1, i === 7 ? `${MARKER} quoted by a person` : `comment ${i + 1}`)) }));
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
    expect(workflow.jobs.apply?.permissions).toEqual({ contents: "read", "pull-requests": "read", actions: "read" });
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
    expect(workflowText.match(/uses: \S+@[0-9a-f]{40} # v\d+\.\d+\.\d+\n/g)).toHaveLength(16);
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
    // The summary, then the commit and run of the plan it showed; the plan itself is that run's artifact.
    const footer = new RegExp(
      `\nPreview of commit ${PR_HEAD}\\. The full plan \\(every change, as JSON\\) is the artifact \\[\`user-groups-plan\`\\]\\(https://github\\.com/acme/groups/actions/runs/${preview.runId}/artifacts/\\d+\\) of \\[run ${preview.runId}\\]\\([^)]+\\): merging applies exactly it, and nothing if the pull request's last commit was not previewed\\.\n<!-- user-groups-plan commit=${PR_HEAD} run=${preview.runId} -->\n$`,
    );
    expect(comment!.body).toMatch(footer);
    expect(comment!.body.replace(footer, "")).toBe(`${MARKER}\n${readFileSync(preview.stepSummary, "utf8")}`);
    const plan = planOf(preview.runId);
    expect(plan.origin).toEqual({ commit: PR_HEAD, run: preview.runId });
    expect(plan.changes.map((c) => c.resourceName)).toEqual(["default.acme", "default.globex", "testing.acme"]);

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

  it("refuses a merge whose last push was not previewed, a plan of another run, and a plan gone, saying so and what to do: nothing changes", async () => {
    // The comment and the artifact are those of the preview above, of PR_HEAD.
    const [comment] = botComments();
    const previewRun = /run=(\d+) -->/.exec(comment!.body)![1]!;
    const again = (head: string) => `re-run the preview of pull request #42's last commit ${head} (its checks), have it reviewed, then re-run this job`;

    // A push after the last preview (cancelled, failed or still running when merged): the merge brings another commit.
    const later = "feedfacefeedfacefeedfacefeedfacefeedface";
    const unpreviewed = await runJob("apply", { head: later });
    expect(unpreviewed.code).toBe(1);
    expect(unpreviewed.output).toContain(`The plan on pull request #42 is the preview of commit ${PR_HEAD}, but the pull request merged commit ${later}: its last push was not previewed`);
    expect(unpreviewed.output).toContain(again(later));

    // A comment naming a run that is not a pull-request run of that commit (here: an apply's push run).
    const edit = (change: (store: GitHubStore) => void) => {
      const store = readStore();
      change(store);
      writeStore(store);
    };
    const setRun = (run: string) => edit((store) => (store.comments.find((c) => c.id === comment!.id)!.body = comment!.body.replace(/run=\d+ -->/, `run=${run} -->`)));
    setRun(unpreviewed.runId);
    const otherRun = await runJob("apply");
    expect(otherRun.code).toBe(1);
    expect(otherRun.output).toContain(`names run ${unpreviewed.runId}, which is not this workflow's preview of commit ${PR_HEAD} (it is a push run of commit ${MERGE_SHA}). Nothing was applied.`);
    setRun(previewRun);

    // The artifact expired (the repository's retention) before the merge.
    const expire = (expired: boolean) => edit((store) => store.artifacts!.filter((a) => a.workflow_run.id === Number(previewRun)).forEach((a) => (a.expired = expired)));
    expire(true);
    const gone = await runJob("apply");
    expect(gone.code).toBe(1);
    expect(gone.output).toContain(`The plan of pull request #42 (the artifact user-groups-plan of run ${previewRun}) is gone: it expired (the repository's artifact retention). Nothing was applied. To apply it: ${again(PR_HEAD)}`);
    expire(false);

    // The artifact holds a plan that another run made: `up` refuses it before the engine runs (exit 2).
    const artifact = readStore().artifacts!.find((a) => a.workflow_run.id === Number(previewRun))!;
    const original = readFileSync(artifact.file, "utf8");
    writeFileSync(artifact.file, JSON.stringify({ ...(JSON.parse(original) as object), origin: { commit: PR_HEAD, run: "999" } }));
    const carried = await runJob("apply");
    writeFileSync(artifact.file, original);
    expect(carried.code).toBe(2);
    expect(carried.output).toContain(`The plan file was made by run 999, not by run ${previewRun} it was taken from`);
    expect(carried.output).toContain(`Preview commit ${PR_HEAD} (re-run the preview of its pull request), have it reviewed, and apply that plan.`);
    expect(server.groups()).toEqual([]);
    expect(server.journal().filter((e) => e.method !== "GET")).toEqual([]);
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
    expect(botComments()[0]!.body).toBe(
      `${MARKER}\n### user-groups: preview failed\n\nNothing was previewed; see [the job log](https://github.com/acme/groups/actions/runs/${failed.runId}). Merging now applies nothing: push again, or re-run this job, to preview.\n`,
    );
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

describe("examples/gitops workflow: the plan travels at any size", () => {
  const POST = ["Keep the plan for the merge", "Post the preview to the pull request"];
  const FIND = ["Find the reviewed plan", "Download the reviewed plan"];

  /** The preview job's last two steps on what the command wrote, then the apply job's first two: the comment, and the plan the apply gets. */
  async function carry(files: (runId: string) => { summary: string; plan?: string }) {
    let written: { summary: string; plan?: string } | undefined;
    const preview = await runJob("preview", {}, undefined, {
      only: POST,
      prepare: (runnerTemp) => {
        written = files(String(1233 + jobs));
        writeFileSync(path.join(runnerTemp, "preview.md"), written.summary);
        if (written.plan !== undefined) writeFileSync(path.join(runnerTemp, "user-groups-plan.json"), written.plan);
      },
    });
    const body = botComments()[0]!.body;
    const apply = await runJob("apply", {}, undefined, { only: FIND });
    const received = path.join(apply.runnerTemp, "reviewed", "user-groups-plan.json");
    return { preview, body, apply, written: written!, received: existsSync(received) ? readFileSync(received, "utf8") : undefined };
  }

  // 140: the issue's comment of 68,060 characters (summary and plan inline); 250: the plan of 65 KB that was dropped.
  for (const [n, truncated] of [[140, false], [250, true], [1000, true]] as const) {
    it(`${n} new groups: the comment stays under ${COMMENT_LIMIT} characters${truncated ? ", says it is truncated and where the full plan is" : ""}; the apply gets the whole plan`, async () => {
      const specs = newGroups(n);
      const { preview, body, apply, written, received } = await carry((run) => previewFiles(specs, { commit: PR_HEAD, run }));
      expect(preview.code, preview.output).toBe(0);
      // The plan alone is larger than a comment would carry (the issue: 65,019 bytes for 250 groups).
      expect(written.plan!.length).toBeGreaterThan(n * 200);
      expect(body.length).toBeLessThanOrEqual(COMMENT_LIMIT);
      expect(body).toContain(`**${n} to create, 0 to update, 0 to replace, 0 to delete, 3 unchanged**`);
      expect(body).toContain(`<!-- user-groups-plan commit=${PR_HEAD} run=${preview.runId} -->`);
      if (truncated) {
        expect(body).toMatch(/\n\.\.\. and \d+ more\n/);
        expect(body).toContain(`**This summary is truncated**: the full plan is the artifact [\`user-groups-plan\`](https://github.com/acme/groups/actions/runs/${preview.runId}/artifacts/`);
      } else {
        expect(body).not.toContain("truncated");
        expect(body).toContain(`| default.customer-${String(n - 1).padStart(4, "0")} | create |`);
      }
      expect(apply.code, apply.output).toBe(0);
      expect(received).toBe(written.plan);
      const plan = parseReviewedPlan(received!);
      expect(typeof plan === "string" ? plan : plan.changes.length).toBe(n);
    });
  }

  it(
    "a real preview of 250 new groups against the emulator: the comment under the limit, the whole plan reaching the apply",
    async () => {
      const specs = newGroups(250);
      const lines = specs.map((g) => `  - { name: "${g.name}", userGroupId: ${g.userGroupId}, mapping: ${JSON.stringify(g.mapping)}, properties: ${JSON.stringify(g.properties)} }`);
      const addGroups = (checkout: string) => writeFileSync(path.join(checkout, "groups.yaml"), `${readFileSync(path.join(checkout, "groups.yaml"), "utf8")}${lines.join("\n")}\n`);
      const started = Date.now();
      // One engine run (the preview); the apply's own preview and up of a plan are the three-group tests' above.
      const preview = await runJob("preview", {}, addGroups);
      const seconds = (Date.now() - started) / 1000;
      expect(preview.code, preview.output).toBe(0);
      const body = botComments()[0]!.body;
      expect(body.length).toBeLessThanOrEqual(COMMENT_LIMIT);
      // 250 new groups, besides the example's three (applied by the tests above, unless run alone).
      expect(body).toMatch(/\*\*(250 to create, 0 to update, 0 to replace, 0 to delete, 3 unchanged|253 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged)\*\*/);
      expect(body).toContain(`<!-- user-groups-plan commit=${PR_HEAD} run=${preview.runId} -->`);
      const kept = readStore().artifacts!.find((a) => a.workflow_run.id === Number(preview.runId))!;
      expect(readFileSync(kept.file, "utf8").length).toBeGreaterThan(65_019);
      expect(planOf(preview.runId).changes.filter((c) => c.change === "create" && c.resourceName.startsWith("default.customer-"))).toHaveLength(250);
      const apply = await runJob("apply", {}, undefined, { only: FIND });
      expect(apply.code, apply.output).toBe(0);
      expect(readFileSync(path.join(apply.runnerTemp, "reviewed", "user-groups-plan.json"), "utf8")).toBe(readFileSync(kept.file, "utf8"));
      console.log(`preview job of 250 new groups: ${seconds.toFixed(1)} s`);
    },
    240_000,
  );

  it("a summary longer than a comment (another version's) is cut at a line, saying how much and where the full plan is", async () => {
    const rows = Array.from({ length: 1500 }, (_, i) => `| default.group-${i} | create | new group; name: "${"x".repeat(40)}" |`);
    const summary = ["### user-groups: Preview of stack `prod`", "", "**1500 to create**", "", "| Group | Change | What changes |", "| --- | --- | --- |", ...rows, ""].join("\n");
    expect(summary.length).toBeGreaterThan(COMMENT_LIMIT);
    const { preview, body } = await carry((run) => ({ summary, plan: planFileText(reviewedPlanOf("prod", [], { commit: PR_HEAD, run })) }));
    expect(preview.code, preview.output).toBe(0);
    expect(body.length).toBeLessThanOrEqual(COMMENT_LIMIT);
    expect(body.length).toBeGreaterThan(COMMENT_LIMIT - 200);
    const shown = body.split("\n").filter((line) => line.startsWith("| default.group-")).length;
    expect(body).toContain(`| default.group-${shown - 1} | create | new group; name: "${"x".repeat(40)}" |\n\n**This summary is truncated** (${1500 - shown} more lines not shown): the full plan is the artifact`);
    expect(body).toContain(`<!-- user-groups-plan commit=${PR_HEAD} run=${preview.runId} -->`);
  });

  it("a preview that kept no plan says the preview failed, and the merge applies nothing", async () => {
    const { preview, body, apply, received } = await carry(() => ({ summary: "### user-groups: Preview of stack `prod`\n" }));
    // The upload step fails (no plan file), the comment step still runs.
    expect(preview.code).toBe(1);
    expect(preview.output).toContain("No files were found with the provided path");
    expect(body).toContain("### user-groups: preview failed");
    expect(body).not.toContain("user-groups-plan commit=");
    expect(apply.code).toBe(1);
    expect(apply.output).toContain("Pull request #42 has no preview plan (its last preview failed or did not run): nothing was applied. To apply it: re-run the preview");
    expect(received).toBeUndefined();
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
