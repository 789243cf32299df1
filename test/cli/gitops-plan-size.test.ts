// examples/gitops: the plan travels from the pull request's preview to the merge's
// apply at any size (the comment under GitHub's limit, the whole plan as the
// preview run's artifact), run by the harness in gitops-workflow.ts.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseReviewedPlan, planFileText, reviewedPlanOf } from "../../provider/cli/reviewed-plan";
import { COMMENT_LIMIT, newGroups, PR_HEAD, previewFiles, useGitopsWorkflow } from "./gitops-workflow";

const { runJob, botComments, readStore, planOf } = useGitopsWorkflow();

describe("examples/gitops workflow: the plan travels at any size", () => {
  const POST = ["Keep the plan for the merge", "Post the preview to the pull request"];
  const FIND = ["Find the reviewed plan", "Download the reviewed plan"];

  /** The preview job's last two steps on what the command wrote, then the apply job's first two: the comment, and the plan the apply gets. */
  async function carry(files: (runId: string) => { summary: string; plan?: string }) {
    let written: { summary: string; plan?: string } | undefined;
    const preview = await runJob("preview", {}, undefined, {
      only: POST,
      prepare: (runnerTemp, runId) => {
        written = files(runId);
        writeFileSync(path.join(runnerTemp, "preview.md"), written.summary);
        if (written.plan !== undefined) writeFileSync(path.join(runnerTemp, "user-groups-plan.json"), written.plan);
      },
    });
    const body = botComments()[0]!.body;
    const apply = await runJob("apply", {}, undefined, { only: FIND });
    const received = path.join(apply.runnerTemp, "reviewed", "user-groups-plan.json");
    return { preview, body, apply, written: written!, received: existsSync(received) ? readFileSync(received, "utf8") : undefined };
  }

  // 140: the comment of 68,060 characters (summary and plan inline); 250: the plan of 65 KB that was dropped.
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
      // One engine run (the preview); the apply's own preview and up of a plan are the three-group tests' (gitops-example.test.ts).
      const preview = await runJob("preview", {}, addGroups);
      const seconds = (Date.now() - started) / 1000;
      expect(preview.code, preview.output).toBe(0);
      const body = botComments()[0]!.body;
      expect(body.length).toBeLessThanOrEqual(COMMENT_LIMIT);
      // 250 new groups, besides the example's three (not applied in this file's own stack, so 253 to create; 250 and 3 unchanged where they were applied).
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
