// Issue #41 item 2, the fleet's side: a UserGroupFleet without a backend URL
// keeps its stacks in `.user-groups/state` of its work directory; when the user
// logged in elsewhere with `pulumi login`, it says so once, as a process warning
// naming both backends and the option that keeps the stacks there.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../provider/automation";
import { createPulumiTestEnv } from "../support/pulumi-env";

const env = createPulumiTestEnv("fleet-backend-notice");
afterAll(() => env.cleanup());

describe("a fleet whose stacks are not where `pulumi login` put the user's", () => {
  it("warns once, naming both backends and backendUrl", async () => {
    const home = path.join(env.workDir, "pulumi-home");
    mkdirSync(home);
    writeFileSync(path.join(home, "credentials.json"), JSON.stringify({ current: `file://${env.backendDir}`, accessTokens: {}, accounts: {} }));
    const warnings: Array<{ name: string; message: string; code?: string }> = [];
    const onWarning = (warning: Error & { code?: string }) => warnings.push({ name: warning.name, message: warning.message, ...(warning.code !== undefined ? { code: warning.code } : {}) });
    process.on("warning", onWarning);
    const saved = process.env.PULUMI_BACKEND_URL;
    delete process.env.PULUMI_BACKEND_URL;
    const workDir = path.join(env.workDir, "service");
    const fleet = new UserGroupFleet({ stack: "customers", workDir, passphrase: "notice-test", envVars: { PULUMI_HOME: home }, lockTimeoutMs: 0, batchWindowMs: 0 });
    try {
      expect(await fleet.list()).toEqual([]);
      expect(await fleet.list()).toEqual([]);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      const ours = warnings.filter((w) => w.code === "USER_GROUPS_BACKEND_ELSEWHERE");
      expect(ours).toEqual([
        {
          name: "UserGroupsWarning",
          code: "USER_GROUPS_BACKEND_ELSEWHERE",
          message:
            `UserGroupFleet: the stacks of this run are kept in file://${workDir}/state, not in the backend \`pulumi login\` chose (file://${env.backendDir}), ` +
            `so \`pulumi stack ls\` does not list them; to keep them there, pass \`backendUrl: "file://${env.backendDir}"\` (or set PULUMI_BACKEND_URL).`,
        },
      ]);
    } finally {
      await fleet.close();
      process.off("warning", onWarning);
      if (saved !== undefined) process.env.PULUMI_BACKEND_URL = saved;
    }
  });
});
