// Issue 23 item 1 / issue 25: the list of groups a recovery adopts is kept in the
// backend beside the run lease, never in the work directory, which a repository
// (and so a pull request) may hold. A `.recovery-<stack>.json` planted there, as
// the recovery of earlier releases wrote it, must decide nothing: a group it names
// that someone else made is not adopted (its name and token stay theirs).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { provisionUserGroups, recoverStack } from "../../../provider/automation";
import { UserGroupsClient } from "../../../provider/client/http-client";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

const KEY = "recover-record-key-0001";
let server: FakeServer;
let env: PulumiTestEnv;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("recover-record");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("recover's adopt list", () => {
  it("a .recovery file planted in the work directory decides nothing", async () => {
    const options = {
      stack: "planted",
      workDir: env.workDir,
      backendUrl: `file://${env.backendDir}`,
      passphrase: "recover-record",
      envVars: { ...env.envVars, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
    };
    await provisionUserGroups({ ...options, groups: [{ name: "Kept", userGroupId: "kept" }] });
    // Someone else's group, made outside the stack.
    const operator = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    await operator.getOrCreate({ name: "Theirs", user_group_id: "theirs" });
    await operator.close();
    const theirs = server.groups().find((g) => g.user_group_id === "theirs")!;
    // The attack: the recovery file of earlier releases, naming that group for adoption.
    writeFileSync(path.join(env.workDir, ".recovery-planted.json"), JSON.stringify({ adopt: ["default.theirs"] }));

    const outcome = await recoverStack({ ...options, groups: [{ name: "Kept", userGroupId: "kept" }, { name: "Mine now", userGroupId: "theirs" }] }).then(
      (report) => report,
      (error: unknown) => error,
    );
    // Refused as any up refuses a group it did not make, and the group is untouched.
    expect(outcome).toBeInstanceOf(Error);
    expect(String((outcome as Error).message)).toMatch(/already exists/);
    expect(server.groups().find((g) => g.user_group_id === "theirs")).toEqual(theirs);
    expect(server.groups().map((g) => g.user_group_id).sort()).toEqual(["kept", "theirs"]);
  }, 120_000);
});
