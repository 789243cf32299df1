// A kill inside a checkpoint write can leave the stack file's metadata sidecar
// empty; from then on `pulumi stack select` fails ("failed to load checkpoint:
// EOF"), before any takeover or recover could begin. A sidecar that stays torn
// is its dead writer's: the next run removes it and goes on.
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { previewUserGroups, provisionUserGroups, recoverStack } from "../../../provider/automation";
import { removeLingeringTornSidecars } from "../../../provider/automation/backend/torn-sidecars";
import { useStackFixture } from "../../support/stack-fixture";

const { env, runOptions } = useStackFixture({ label: "torn-sidecar", apiKeys: ["torn-sidecar-key-0001"], passphrase: "torn-test" });

describe("a torn stack sidecar", () => {
  it("is removed once it stays torn, so a preview and a recover of the stack work again; the state is untouched", async () => {
    const options = runOptions("torn");
    const groups = [{ name: "Torn", userGroupId: "torn-1" }];
    await provisionUserGroups({ ...options, groups });
    const stacks = path.join(env.backendDir, ".pulumi", "stacks", "user-groups");
    const state = readFileSync(path.join(stacks, "torn.json"), "utf8");
    truncateSync(path.join(stacks, "torn.json.attrs"), 0); // what the kill leaves
    expect((await previewUserGroups({ ...options, groups })).changed).toBe(false);
    expect(readFileSync(path.join(stacks, "torn.json"), "utf8")).toBe(state);
    writeFileSync(path.join(stacks, "torn.json.attrs"), "");
    const report = await recoverStack({ ...options, groups });
    expect(report.up.changed).toBe(false);
  }, 120_000);

  it("is left alone while a writer could still be rewriting it, and a whole one is never touched", async () => {
    const dir = path.join(env.workDir, "sidecars");
    const stacks = path.join(dir, ".pulumi", "stacks", "user-groups");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(stacks, { recursive: true });
    writeFileSync(path.join(stacks, "s.json.attrs"), "");
    writeFileSync(path.join(stacks, "s.json.bak.attrs"), '{"user.cache_control":""}');
    writeFileSync(path.join(stacks, "other.json.attrs"), "");
    // Rewritten (whole) while we wait: a live writer's.
    const pending = removeLingeringTornSidecars(dir, "user-groups", "s", 200);
    setTimeout(() => writeFileSync(path.join(stacks, "s.json.attrs"), "{}"), 50);
    expect(await pending).toEqual([]);
    writeFileSync(path.join(stacks, "s.json.attrs"), "");
    expect(await removeLingeringTornSidecars(dir, "user-groups", "s", 50)).toEqual([path.join(stacks, "s.json.attrs")]);
    expect(readFileSync(path.join(stacks, "s.json.bak.attrs"), "utf8")).toContain("cache_control");
    expect(readFileSync(path.join(stacks, "other.json.attrs"), "utf8")).toBe(""); // another stack's
  });
});
