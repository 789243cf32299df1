// A kill inside a checkpoint write can leave the stack file's metadata sidecar
// empty; from then on `pulumi stack select` fails ("failed to load checkpoint:
// EOF"), before any takeover or recover could begin. A sidecar that stays torn
// is its dead writer's: the next run removes it and goes on. (Which sidecar is
// removed and which left alone, on the clock: torn-sidecars.unit.test.ts.)
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { previewUserGroups, provisionUserGroups, recoverStack } from "../../../provider/automation";
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
});
