// The checks of `up --plan-file` (reviewed-plan.ts), without the engine: a plan
// file's text refused or accepted before anything runs, and a preview or an up
// held to the reviewed changes. test/cli/reviewed-plan.test.ts proves the same
// through the command and a real engine.
import { describe, expect, it } from "vitest";
import type { GroupSpec, RunResult } from "../../provider/automation/model";
import { assertAppliedAsReviewed, assertPreviewAsReviewed, checkedReviewedPlan, PlanMismatchError, planFileText, type PlannedChange, reviewedPlanOf } from "../../provider/cli/reviewed-plan";

const COMMIT = "a".repeat(40);
const spec: GroupSpec = { name: "Initech", userGroupId: "initech" };
const create: PlannedChange = { resourceName: "default.initech", change: "create", declared: { name: "Initech", userGroupId: "initech" } };
const reviewed = reviewedPlanOf("prod", [create], { commit: COMMIT, run: "42" });
const nameOf = (s: GroupSpec) => `default.${s.userGroupId}`;

function preview(groups: RunResult["groups"]): RunResult {
  return { operation: "preview", stack: "prod", backendUrl: "file:///tmp/state", changed: groups.some((g) => g.change !== "same"), summary: {} as RunResult["summary"], groups };
}

function refusal(run: () => unknown): PlanMismatchError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(PlanMismatchError);
    return error as PlanMismatchError;
  }
  throw new Error("not refused");
}

describe("checkedReviewedPlan", () => {
  it("answers the plan a preview of this stack, commit and run wrote", () => {
    expect(checkedReviewedPlan(planFileText(reviewed), "plan.json", "prod", { commit: COMMIT, run: "42" })).toEqual(reviewed);
  });

  it("refuses a file that is not a plan, an edited plan, another stack's, another commit's (nothing changed)", () => {
    expect(refusal(() => checkedReviewedPlan("{", "plan.json", "prod", undefined))).toMatchObject({ code: "plan_file_invalid", message: 'The plan file "plan.json" cannot be used: it is not JSON. Nothing was changed.' });
    const edited = planFileText({ ...reviewed, changes: [{ ...create, declared: { name: "Evil", userGroupId: "initech" } }] });
    expect(refusal(() => checkedReviewedPlan(edited, "plan.json", "prod", undefined)).message).toContain("its digest does not match its changes");
    expect(refusal(() => checkedReviewedPlan(planFileText(reviewed), "plan.json", "staging", undefined))).toMatchObject({
      code: "plan_file_invalid",
      message: `The plan file "plan.json" is stack "prod"'s, not "staging"'s. Nothing was changed.`,
    });
    const other = refusal(() => checkedReviewedPlan(planFileText(reviewed), "plan.json", "prod", { commit: "b".repeat(40), run: "42" }));
    expect(other.code).toBe("plan_origin_mismatch");
    expect(other.applied).toBe(false);
  });
});

describe("a preview and an up held to the reviewed changes", () => {
  it("lets a preview that finds exactly the reviewed changes through", () => {
    expect(() => assertPreviewAsReviewed(reviewed, preview([{ resourceName: "default.initech", userGroupId: "initech", change: "create" }]), [spec], nameOf)).not.toThrow();
  });

  it("refuses a preview that finds other changes, before anything is applied (applied false, each difference named)", () => {
    const error = refusal(() => assertPreviewAsReviewed(reviewed, preview([{ resourceName: "default.initech", userGroupId: "initech", change: "same" }]), [spec], nameOf));
    expect(error.code).toBe("plan_mismatch");
    expect(error.applied).toBe(false);
    expect(error.differences).toEqual(["default.initech: reviewed: create; now: no change"]);
    expect(error.message).toMatch(/^a preview now finds other changes than the reviewed one \(reviewed sha256:/);
    expect(error.message).toMatch(/Nothing was changed\. Preview again and have the new changes reviewed\.$/);
  });

  it("names an up that applied other changes than the reviewed ones as applied (a failure, not a refusal)", () => {
    const applied = reviewedPlanOf("prod", [create, { resourceName: "default.globex", change: "delete" }]);
    expect(() => assertAppliedAsReviewed(reviewed, reviewedPlanOf("prod", [create]))).not.toThrow();
    const error = refusal(() => assertAppliedAsReviewed(reviewed, applied));
    expect(error.applied).toBe(true);
    expect(error.differences).toEqual(["default.globex: reviewed: no change; now: delete"]);
    expect(error.message).toMatch(/^the up applied other changes than the reviewed ones \(reviewed sha256:/);
    expect(error.message).toMatch(/Review the stack now \(user-groups drift\)\.$/);
  });
});
