// Runs the `script:` of an actions/github-script step as that action does (an
// async function of require, github, context, core), in the step's directory
// and environment, against a repository kept in a JSON file (a pull request's
// comments, the workflow's runs and their artifacts): the subset of Octokit the
// example workflow uses (paginate, issues.listComments, createComment,
// updateComment, repos.listPullRequestsAssociatedWithCommit,
// actions.getWorkflowRun, actions.listWorkflowRunArtifacts).
// Usage: node github-script-runner.cjs SCRIPT STORE. Context comes from
// GITHUB_REPOSITORY, PR_NUMBER, GITHUB_SHA, GITHUB_RUN_ID, MERGED_PR (the pull
// request that merged the pushed commit, if any) and MERGED_HEAD_SHA (its last
// commit); core.setOutput appends to GITHUB_OUTPUT.
"use strict";
const fs = require("node:fs");

const [scriptFile, storeFile] = process.argv.slice(2);
const store = fs.existsSync(storeFile) ? JSON.parse(fs.readFileSync(storeFile, "utf8")) : { nextId: 1, comments: [] };
store.runs ??= {};
store.artifacts ??= [];
const save = () => fs.writeFileSync(storeFile, JSON.stringify(store, null, 2));
const [owner, repo] = process.env.GITHUB_REPOSITORY.split("/");
const number = Number(process.env.PR_NUMBER);
const BOT = { login: "github-actions[bot]", type: "Bot" };

function checkRepo(params) {
  if (params.owner !== owner || params.repo !== repo) throw new Error(`unexpected repository ${params.owner}/${params.repo}`);
}

const github = {
  rest: {
    repos: {
      async listPullRequestsAssociatedWithCommit(params) {
        checkRepo(params);
        if (params.commit_sha !== process.env.GITHUB_SHA) return { data: [] };
        const head = { sha: process.env.MERGED_HEAD_SHA, ref: "feature" };
        return { data: process.env.MERGED_PR ? [{ number: Number(process.env.MERGED_PR), state: "closed", merged_at: "2026-11-25T12:00:00Z", head }] : [] };
      },
    },
    actions: {
      async getWorkflowRun(params) {
        checkRepo(params);
        const run = store.runs[String(params.run_id)];
        if (!run) throw Object.assign(new Error("Not Found"), { status: 404 });
        return { data: run };
      },
      async listWorkflowRunArtifacts(params) {
        checkRepo(params);
        const artifacts = store.artifacts
          .filter((a) => a.workflow_run.id === Number(params.run_id) && (params.name === undefined || a.name === params.name))
          .map(({ file: _file, ...artifact }) => artifact);
        return { data: { total_count: artifacts.length, artifacts } };
      },
    },
    issues: {
      async listComments(params) {
        checkRepo(params);
        const perPage = params.per_page ?? 30;
        const page = params.page ?? 1;
        const all = store.comments.filter((c) => c.issue_number === params.issue_number);
        return { data: all.slice((page - 1) * perPage, page * perPage) };
      },
      async createComment(params) {
        checkRepo(params);
        const comment = { id: store.nextId++, issue_number: params.issue_number, user: BOT, body: params.body };
        store.comments.push(comment);
        save();
        return { data: comment };
      },
      async updateComment(params) {
        checkRepo(params);
        const comment = store.comments.find((c) => c.id === params.comment_id);
        if (!comment) throw new Error(`no comment ${params.comment_id}`);
        if (comment.user.login !== BOT.login) throw new Error("the bot may not edit another user's comment");
        comment.body = params.body;
        save();
        return { data: comment };
      },
    },
  },
  async paginate(method, params) {
    const all = [];
    for (let page = 1; ; page++) {
      const { data } = await method({ ...params, page });
      all.push(...data);
      if (data.length < (params.per_page ?? 30)) return all;
    }
  },
};
const context = { repo: { owner, repo }, sha: process.env.GITHUB_SHA, runId: Number(process.env.GITHUB_RUN_ID), payload: { pull_request: { number } } };
const core = {
  info: (text) => console.log(text),
  setFailed: (text) => ((process.exitCode = 1), console.error(text)),
  setOutput: (name, value) => fs.appendFileSync(process.env.GITHUB_OUTPUT, `${name}=${value}\n`),
};

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
new AsyncFunction("require", "github", "context", "core", fs.readFileSync(scriptFile, "utf8"))(require, github, context, core).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
