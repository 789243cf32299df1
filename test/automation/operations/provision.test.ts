// pulumi-user-groups/automation: provisioning from a service's own code.
import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UserGroupsClient } from "../../../provider/client/http-client";
import { REPO_ROOT } from "../../support/pulumi-env";
import { useStackFixture } from "../../support/stack-fixture";

type AutomationModule = typeof import("../../../provider/automation");
// As a service loads it: the built package, by name.
const automation = createRequire(path.join(REPO_ROOT, "package.json"))("pulumi-user-groups/automation") as AutomationModule;

const KEY = "automation-customer-key-0001";
const { server, env, envVars, runOptions } = useStackFixture({ label: "automation", apiKeys: [KEY], passphrase: "automation-test" });

function options(stack: string) {
  return runOptions(stack, { workDir: path.join(env.workDir, "groups"), envVars: envVars({ PULUMI_BACKEND_URL: "" }) });
}

describe("provisionUserGroups", () => {
  it("validates the groups before Pulumi runs", async () => {
    const error = await automation
      .provisionUserGroups({ ...options("invalid"), groups: [{ name: "A", userGroupId: "a" }, { name: "", userGroupId: "a", extra: 1 } as import("../../../provider/automation").GroupSpec] })
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(automation.GroupsValidationError);
    expect((error as Error).message).toMatch(/groups\[1\] \(userGroupId "a"\): name must be 1 to 255 characters/);
    expect(server.journal()).toEqual([]);
  });

  it("provisions stacks side by side, returning each group's token and change", async () => {
    const events: string[] = [];
    const [eu, us] = await Promise.all([
      automation.provisionUserGroups({
        ...options("eu"),
        groups: [{ name: "Acme EU", userGroupId: "acme-eu", properties: { region: "eu" } }],
        onEvent: (event) => events.push(`${event.resourceName}:${event.change}:${event.phase}`),
      }),
      automation.provisionUserGroups({ ...options("us"), groups: [{ name: "Acme US", userGroupId: "acme-us" }] }),
    ]);
    expect(eu.summary).toEqual({ create: 1, update: 0, replace: 0, delete: 0, same: 0 });
    expect(eu.groups).toEqual([
      expect.objectContaining({ userGroupId: "acme-eu", change: "create", name: "Acme EU", apiEnvironmentTag: "Customer" }),
    ]);
    const stored = (id: string) => server.groups().find((g) => g.user_group_id === id);
    expect(eu.groups[0]?.token).toBe(stored("acme-eu")?.token);
    expect(us.groups[0]?.token).toBe(stored("acme-us")?.token);
    expect(events).toEqual(["default.acme-eu:create:started", "default.acme-eu:create:done"]);
  });

  it("fails fast with StackLockedError on a second concurrent run of one stack, and the state stays sound", async () => {
    const groups = [{ name: "Acme EU", userGroupId: "acme-eu", properties: { region: "eu", tier: "gold" } }];
    const started = Date.now();
    const [first, second] = await Promise.allSettled([
      automation.provisionUserGroups({ ...options("eu"), groups }),
      automation.provisionUserGroups({ ...options("eu"), groups }),
    ]);
    const outcomes = [first, second];
    const rejected = outcomes.filter((o) => o.status === "rejected");
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toBeInstanceOf(automation.StackLockedError);
    expect(String((rejected[0] as PromiseRejectedResult).reason)).toMatch(/Stack "eu" is locked/);
    expect(outcomes.find((o) => o.status === "fulfilled")).toMatchObject({ value: { summary: { update: 1 } } });
    expect(Date.now() - started).toBeLessThan(60_000);
    const preview = await automation.previewUserGroups({ ...options("eu"), groups });
    expect(preview.changed).toBe(false);
    expect(server.groups().filter((g) => g.user_group_id === "acme-eu")).toHaveLength(1);
  });

  it("reports a failed run with what the engine said of each group, from its diagnostic events", async () => {
    // A group someone else holds: its create fails; the run's error names it and why.
    const theirs = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    const { response } = await theirs.getOrCreate({ name: "Theirs", user_group_id: "taken" });
    const error = await automation
      .provisionUserGroups({ ...options("failing"), groups: [{ name: "Ours", userGroupId: "taken" }] })
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(automation.RunFailedError);
    const failed = error as InstanceType<typeof automation.RunFailedError>;
    expect(failed.code).toBe("run_failed");
    expect(failed.diagnostics).toHaveLength(1);
    expect(failed.diagnostics[0]).toMatch(/^default\.taken: A user group with userGroupId "taken" already exists in the Customer environment/);
    expect(failed.message).toMatch(/^up of stack "failing" failed:\n {2}default\.taken: /);
    // The engine's generic closing lines are not repeated as problems.
    expect(failed.message).not.toMatch(/update failed|failed to register/);
    await automation.destroyUserGroups(options("failing"));
    await theirs.delete({ current_token: response.user_group.token, user_group_id: "taken" });
  });

  it("refreshes and destroys a stack", async () => {
    const refreshed = await automation.refreshUserGroups(options("us"));
    expect(refreshed.changed).toBe(false);
    const destroyed = await automation.destroyUserGroups(options("us"));
    expect(destroyed.summary.delete).toBe(1);
    await automation.destroyUserGroups(options("eu"));
    expect(server.groups()).toEqual([]);
  });
});
