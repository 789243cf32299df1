// Issue #41 item 4, the plugin's side: a YAML program on the installed
// user-groups plugin, as a user runs it (no terminal). A refresh with a
// rejected key (a read) and a destroy of it (a delete) each say one line under
// the resource, the operation named as it was, the cause and the fix; Pulumi's
// provider server no longer echoes a JavaScript stack trace.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { type CliEnv, createCliEnv, installPlugin } from "./support";

const KEY = "plugin-errors-key-customer-1";
let server: FakeServer;
let env: CliEnv;

/** `pulumi <args>`, its output whether it failed or not. */
async function pulumi(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ ok: boolean; out: string }> {
  return env.pulumi(args, { env: extra }).then(
    ({ stdout, stderr }) => ({ ok: true, out: `${stdout}\n${stderr}` }),
    (error: Error) => ({ ok: false, out: error.message }),
  );
}

/** The resource's block under "Diagnostics:" is one line, `error: ` and (after what the engine puts first) `line`. */
function expectOneLine(out: string, line: string): void {
  const diagnostics = out.slice(out.indexOf("\nDiagnostics:\n"));
  const block = /\n {2}user-groups:index:UserGroup \(acme\):\n((?: {4}.*\n)+)/.exec(diagnostics)?.[1];
  expect(block, out).toBeDefined();
  const lines = block!.trimEnd().split("\n");
  expect(lines, out).toHaveLength(1);
  expect(lines[0]!.replace(/^ {4}error: (?:Preview failed: |Refresh failed: )?/, "").startsWith(line), out).toBe(true);
  expect(out).not.toMatch(/^\s+at /m);
  expect(out).not.toMatch(/Update User|Delete User|Error: /);
}

beforeAll(async () => {
  server = await startFakeServer({ port: 0, apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createCliEnv("plugin-errors");
  await installPlugin(env);
  writeFileSync(
    path.join(env.workDir, "Pulumi.yaml"),
    "name: plugin-errors\nruntime: yaml\nresources:\n  acme:\n    type: user-groups:index:UserGroup\n    properties:\n      name: Acme Corp\n      userGroupId: acme\n",
  );
  await env.pulumi(["stack", "init", "dev"]);
  await env.pulumi(["up", "--yes"], { env: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY } });
}, 300_000);
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("the plugin's failures, as `pulumi` prints them", { timeout: 300_000 }, () => {
  it("refresh and destroy with a rejected key: a read and a delete, one line each, with the key's fix", async () => {
    const wrong = { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: "not-a-key-of-this-server-02" };
    const refresh = await pulumi(["refresh", "--yes"], wrong);
    expect(refresh.ok).toBe(false);
    expectOneLine(refresh.out, `Reading the user group (PUT ${server.url}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 401 unauthorized`);
    expect(refresh.out).toContain("The service rejected the API key (wrong, revoked or rotated): set USER_GROUPS_API_KEY or the stack's config user-groups:apiKey");

    const destroy = await pulumi(["destroy", "--yes"], wrong);
    expect(destroy.ok).toBe(false);
    expectOneLine(destroy.out, `Deleting the user group (DELETE ${server.url}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 401 unauthorized`);
    expect(destroy.out).not.toContain("not-a-key-of-this-server-02");

    const cleanup = await pulumi(["destroy", "--yes"], { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY });
    expect(cleanup.ok, cleanup.out).toBe(true);
    expect(server.groups()).toEqual([]);
  });
});
