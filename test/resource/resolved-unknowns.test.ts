// Issue #39, item 4, through the engine: a program's output whose value holds
// one of Pulumi's unknown-value markers (at depth) used to go through, the
// engine dropping it (the service and the state held `{"nested": {}, "plan":
// "team"}`; a rotationTrigger was left out; a name failed as "required"). Each
// is now refused once its value is known, in a preview and in an up, naming
// the resource and the path, with nothing registered and no request sent. A
// value that is legitimately unknown in a preview (another group's output not
// created yet) still previews, and the up then creates with its value.
// Run with the `pulumi` command on an on-disk program, as a user runs it.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { UNKNOWN_VALUE } from "../../provider/logic/reserved-values";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { readStoredState } from "../support/user-group-stack";

const run = promisify(execFile);
const KEY = "resolved-unknowns-key-000001";
/** UnknownBoolValue and UnknownObjectValue of the engine's rpc.go: any of the seven is refused. */
const BOOL_MARKER = "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7";
const OBJECT_MARKER = "dd056dcd-154b-4c76-9bd3-c8f88648b5ff";

let server: FakeServer;
let env: PulumiTestEnv;

async function pulumi(args: string[]): Promise<{ code: number; out: string }> {
  const extra = { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY };
  return run("pulumi", args, { cwd: env.workDir, env: { ...process.env, ...env.envVars, ...extra }, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}\n${stderr}` }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, out: `${error.stdout ?? ""}\n${error.stderr ?? ""}` }),
  );
}

/** The program: `body` declares the groups (UserGroup and pulumi in scope). */
function writeProgram(body: string): void {
  writeFileSync(path.join(env.workDir, "index.js"), `const pulumi = require("@pulumi/pulumi");\nconst { UserGroup } = require("pulumi-user-groups");\n${body}\n`);
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("resolved-unknowns");
  writeFileSync(path.join(env.workDir, "Pulumi.yaml"), "name: resolved-unknowns\nruntime: nodejs\n");
  writeFileSync(path.join(env.workDir, "package.json"), JSON.stringify({ name: "resolved-unknowns", main: "index.js" }));
  writeProgram("");
  expect((await pulumi(["stack", "init", "dev"])).code).toBe(0);
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("a marker inside an output's value", { timeout: 120_000 }, () => {
  it.each([
    [
      "properties at depth",
      `new UserGroup("tenant", { name: "Tenant", userGroupId: "tenant", properties: pulumi.output({ plan: "team", nested: { v: "${UNKNOWN_VALUE}" } }) });`,
      `UserGroup "tenant": properties.nested.v is Pulumi's unknown-value marker "${UNKNOWN_VALUE}"`,
    ],
    [
      "a rotationTrigger (secret)",
      `new UserGroup("tenant", { name: "Tenant", userGroupId: "tenant", rotationTrigger: pulumi.secret("${BOOL_MARKER}") });`,
      `UserGroup "tenant": rotationTrigger is Pulumi's unknown-value marker "${BOOL_MARKER}"`,
    ],
    [
      "a name from a promise",
      `new UserGroup("tenant", { name: Promise.resolve("${OBJECT_MARKER}"), userGroupId: "tenant" });`,
      `UserGroup "tenant": name is Pulumi's unknown-value marker "${OBJECT_MARKER}"`,
    ],
  ])("in %s: preview and up refuse it naming the path; nothing is created", async (_where, body, refusal) => {
    writeProgram(body);
    for (const args of [["preview"], ["up", "--yes", "--skip-preview"]]) {
      const result = await pulumi(args);
      expect(result.code, result.out).not.toBe(0);
      expect(result.out).toContain(refusal);
      // Pulumi's RunError: the message alone, no stack trace, no misleading "name is required".
      expect(result.out).not.toMatch(/unhandled exception|^\s+at |is required/m);
    }
    expect(server.groups()).toEqual([]);
    expect(readStoredState(env)).not.toContain('"tenant"');
  });

  it("a value unknown in the preview (another group's output) previews, and the up creates with its value", async () => {
    writeProgram(
      `const first = new UserGroup("first", { name: "First", userGroupId: "first" });\n` +
        `new UserGroup("second", { name: first.name.apply((n) => n + " and second"), userGroupId: "second", rotationTrigger: first.providedId, properties: { plan: "team", first: { teamId: first.teamId } } });`,
    );
    const preview = await pulumi(["preview"]);
    expect(preview.code, preview.out).toBe(0);
    expect(preview.out).toMatch(/UserGroup first create/);
    expect(preview.out).toMatch(/UserGroup second create/);
    const up = await pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, up.out).toBe(0);
    const first = server.groups().find((g) => g.user_group_id === "first")!;
    const second = server.groups().find((g) => g.user_group_id === "second")!;
    expect(second.name).toBe("First and second");
    expect(second.properties).toEqual({ plan: "team", first: { teamId: first.team_id } });
    expect(readStoredState(env)).toContain('"rotationTrigger":"first"');
    const destroy = await pulumi(["destroy", "--yes", "--skip-preview"]);
    expect(destroy.code, destroy.out).toBe(0);
  });
});
