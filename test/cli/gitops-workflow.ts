// The harness of the examples/gitops tests (gitops-example.test.ts: the workflow's
// jobs; gitops-plan-size.test.ts: the plan at any size): the workflow's own `run:`
// lines (and its github-script step) executed as written, against the fake
// server, the way the pull-request, main-branch and nightly jobs run them: each
// job in a fresh copy of the repository, with exactly the environment the
// workflow gives that job (its secrets, nothing inherited; none for a fork's pull
// request), one shared backend, the pull request's comments, the workflow's runs
// and their artifacts kept in a file (the fake GitHub).
//
// `useGitopsWorkflow()` registers, in the file that calls it, its own fake server
// and Pulumi environment (useStackFixture) and a beforeAll that sets up the fake
// GitHub: each test file has its own, so the files run side by side.
import { execFile } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import yaml from "js-yaml";
import { beforeAll, expect } from "vitest";
import type { FakeServer } from "../../fake-server";
import { type GroupSpec, resourceNameOf, type RunResult } from "../../provider/automation/internal";
import { withCreateDetails } from "../../provider/cli/output";
import { parseReviewedPlan, planFileText, plannedChangesOf, type PlanOrigin, type ReviewedPlan, reviewedPlanOf, reviewSummaryMarkdown } from "../../provider/cli/reviewed-plan";
import { REPO_ROOT } from "../support/pulumi-env";
import { useStackFixture } from "../support/stack-fixture";
import { USER_GROUPS_CLI } from "../support/user-groups-cli";

const GITHUB_SCRIPT_RUNNER = path.join(REPO_ROOT, "test/support/github-script-runner.cjs");

export const EXAMPLE = path.join(REPO_ROOT, "examples/gitops");
export const SECRETS: Record<string, string> = {
  PULUMI_CONFIG_PASSPHRASE: "gitops-state-passphrase",
  USER_GROUPS_API_KEY: "gitops-customer-rw-key-00001",
  USER_GROUPS_API_KEY_TESTING: "gitops-testing-rw-key-000002",
  USER_GROUPS_READONLY_API_KEY: "gitops-customer-ro-key-00003",
  USER_GROUPS_READONLY_API_KEY_TESTING: "gitops-testing-ro-key-000004",
};
const PR_NUMBER = "42";
const REPOSITORY = "acme/groups";
/** The pull request's last commit (what its preview is of, and what its merge brings), and the merge commit on main. */
export const PR_HEAD = "4d2c0ffee4d2c0ffee4d2c0ffee4d2c0ffee0042";
export const MERGE_SHA = "0123456789abcdef0123456789abcdef01234567";
const WORKFLOW_ID = 77;

export type Env = Record<string, string>;
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
export interface Workflow {
  on: Record<string, { paths?: string[]; branches?: string[] } | unknown>;
  env?: Env;
  permissions?: unknown;
  jobs: Record<string, Job>;
}

export const workflowText = readFileSync(path.join(EXAMPLE, "user-groups.yml"), "utf8");
export const workflow = yaml.load(workflowText) as Workflow;

/** Who opened the pull request, and what GitHub gives its jobs. */
export interface JobContext {
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

export interface JobRun {
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
export interface GitHubStore {
  nextId: number;
  comments: Comment[];
  runs?: Record<string, { id: number; workflow_id: number; event: string; head_sha: string; html_url: string }>;
  artifacts?: Artifact[];
}

function exec(command: string, args: string[], cwd: string, stepEnv: Env): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: stepEnv }, (error, out, err) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: out + err }));
  });
}

/** The event that starts each job (what GitHub's API says of its run). */
const EVENT_OF: Record<string, string> = { preview: "pull_request", apply: "push", heal: "workflow_dispatch", drift: "schedule" };

export interface Comment {
  id: number;
  issue_number: number;
  user: { login: string };
  body: string;
}

export const MARKER = "<!-- user-groups-preview -->";
/** GitHub refuses a comment body over this many characters. */
export const COMMENT_LIMIT = 65_536;

/** `n` new groups, each with a mapping and properties, as a groups file declares them. */
export function newGroups(n: number): GroupSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `Customer ${String(i).padStart(4, "0")} Holding GmbH`,
    userGroupId: `customer-${String(i).padStart(4, "0")}`,
    mapping: { sales: "warehouse-eu", finance: `ledger-${i % 7}` },
    properties: { region: i % 2 ? "eu" : "us", plan: "enterprise", seats: 10 + i },
  }));
}

/** What `preview --summary-file --plan-file` writes for `n` new groups (the command's own pure functions, no engine). */
export function previewFiles(specs: readonly GroupSpec[], origin: PlanOrigin): { summary: string; plan: string } {
  const groups = specs.map((spec) => ({ resourceName: resourceNameOf(spec), userGroupId: spec.userGroupId, change: "create" as const }));
  const result: RunResult = withCreateDetails(
    { operation: "preview", stack: "prod", backendUrl: "file:///state", changed: true, summary: { create: specs.length, update: 0, replace: 0, delete: 0, same: 3 }, groups },
    specs,
  );
  const plan = reviewedPlanOf("prod", plannedChangesOf(result, specs, resourceNameOf), origin);
  return { summary: reviewSummaryMarkdown(result, plan), plan: planFileText(plan) };
}

export const apiKeys = Object.entries(SECRETS).filter(([name]) => name !== "PULUMI_CONFIG_PASSPHRASE");

/** Some steps of a job only (see runJob). */
export interface JobPart {
  readonly only: readonly string[];
  readonly prepare?: (runnerTemp: string, runId: string) => void;
}

/** What a test file of the workflow uses: its fake server, its jobs, the pull request's comments and the workflow's artifacts. */
export interface GitopsWorkflow {
  readonly server: FakeServer;
  /**
   * One job: a fresh copy of the repository (`edit` may change it), then the job's steps. With `part`, only the steps of
   * those names, after `prepare` filled $RUNNER_TEMP (given this run's id): a step tried without an engine run.
   */
  readonly runJob: (job: string, context?: JobContext, edit?: (checkout: string) => void, part?: JobPart) => Promise<JobRun>;
  readonly comments: () => Comment[];
  /** The comments the workflow posted (by github-actions[bot], starting with the marker). */
  readonly botComments: () => Comment[];
  readonly readStore: () => GitHubStore;
  readonly writeStore: (store: GitHubStore) => void;
  readonly planOf: (runId: string) => ReviewedPlan;
}

/** The fixture (fake server, Pulumi environment, fake GitHub) for the calling test file, and what its tests use. */
export function useGitopsWorkflow(): GitopsWorkflow {
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

  /** One job: a fresh copy of the repository, then each `run:` line (npm ci is what the shim on PATH stands for), github-script step and artifact step. */
  async function runJob(
    job: string,
    context: JobContext = {},
    edit?: (checkout: string) => void,
    /** Only the steps of these names (the others skipped), after `prepare` filled $RUNNER_TEMP: a step tried without an engine run. */
    part?: JobPart,
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
    // This run, as GitHub's API shows it: a preview is a pull-request run of the pull request's head commit.
    const scope: RunScope = { runId: String(1233 + jobs), runnerTemp, outputs: {} };
    part?.prepare?.(runnerTemp, scope.runId);
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

  function comments(): Comment[] {
    return existsSync(commentsStore) ? (JSON.parse(readFileSync(commentsStore, "utf8")) as { comments: Comment[] }).comments : [];
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

  return { server, runJob, comments, botComments, readStore, writeStore, planOf };
}
