// examples/gitops: the workflow's jobs (pull request, main branch, nightly),
// run as GitHub runs them by the harness in gitops-workflow.ts, and the workflow
// as a team would adopt it: actionlint (with shellcheck) and zizmor find nothing.
// The plan at any size: gitops-plan-size.test.ts.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../provider/client/http-client";
import { REPO_ROOT } from "../support/pulumi-env";
import { apiKeys, EXAMPLE, type GitHubStore, MARKER, MERGE_SHA, PR_HEAD, SECRETS, useGitopsWorkflow, workflow, workflowText } from "./gitops-workflow";

const { server, runJob, comments, botComments, readStore, writeStore, planOf } = useGitopsWorkflow();

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
