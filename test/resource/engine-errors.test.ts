// Issue #41 items 3 and 4: what a user of the dynamic resource reads when the
// engine's call to the provider fails, run with the `pulumi` command on an
// on-disk program as a user runs it, no terminal.
// - A rejected key (refresh: a read, destroy: a delete), an unreachable
//   service and a timeout (up: a create), a refused input (up: the service's
//   400): each is one line under the resource naming the operation as it was
//   (a refresh's read is not "Update User (PUT ...)"), the cause and the fix;
//   no JavaScript stack trace, the message not printed twice.
// - After `pulumi config rm user-groups:baseUrl`, a plain refresh still has
//   the base URL the last up recorded: its refusal says so and names the fix,
//   and doing what it says (refresh --run-program) works, then destroy.
// Every up, refresh and destroy runs with --skip-preview: without it, an up that
// fails ran the program and the dynamic provider twice (a preview, then the
// update: ~5 s of CPU more each on 2 busy cores), and the preview asserts nothing
// here; the failures are the provider's own, the same in either phase.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { refusedPort } from "../../testkit/free-port";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type SilentListener, startSilentListener } from "../support/silent-listener";
import { story } from "../support/story";

const run = promisify(execFile);
const KEY = "engine-errors-key-000000001";
let server: FakeServer;
let env: PulumiTestEnv;
/** Accepts connections and never answers. */
let silent: SilentListener;
let silentUrl = "";
/** A port nothing listens on. */
let closedUrl = "";
/** Answers every request as a service refusing the group's name (W3's error body). */
let strict: Server;
let strictUrl = "";

/** Few, quick retries: the failures are the point, not the waiting. */
const FAST = { USER_GROUPS_MAX_ATTEMPTS: "2", USER_GROUPS_RETRY_BASE_DELAY_MS: "10", USER_GROUPS_RETRY_MAX_DELAY_MS: "20", USER_GROUPS_HTTP_TIMEOUT_MS: "700" };

interface Pulumi {
  code: number;
  out: string;
}

/** `pulumi <args>` in the program's directory, no terminal; `extra` env on top of the test's. */
async function pulumi(args: string[], extra: NodeJS.ProcessEnv = {}, stdin?: string): Promise<Pulumi> {
  const child = run("pulumi", args, { cwd: env.workDir, env: { ...process.env, ...env.envVars, ...FAST, ...extra }, maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin?.end(stdin ?? "");
  return child.then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}\n${stderr}` }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, out: `${error.stdout ?? ""}\n${error.stderr ?? ""}` }),
  );
}

function writeProgram(): void {
  writeFileSync(path.join(env.workDir, "Pulumi.yaml"), "name: engine-errors\nruntime: nodejs\n");
  writeFileSync(path.join(env.workDir, "package.json"), JSON.stringify({ name: "engine-errors", main: "index.js" }));
  writeFileSync(
    path.join(env.workDir, "index.js"),
    `const { UserGroup } = require("pulumi-user-groups");\nconst acme = new UserGroup("acme", { name: "Acme", userGroupId: "acme" });\nexports.teamId = acme.teamId;\n`,
  );
}

/**
 * The failure as the user reads it: the resource's block under "Diagnostics:" is
 * one line, `error: ` and the message starting with `line`; nothing anywhere is a
 * stack trace or calls the operation by the HTTP method's title.
 */
function expectOneLine(out: string, line: string): void {
  const diagnostics = out.slice(out.indexOf("\nDiagnostics:\n"));
  const block = /\n {2}pulumi-nodejs:dynamic\/pulumi-user-groups:UserGroup \(acme\):\n((?: {4}.*\n)+)/.exec(diagnostics)?.[1];
  expect(block, out).toBeDefined();
  const lines = block!.trimEnd().split("\n");
  expect(lines, out).toHaveLength(1);
  // The engine may put its own words first ("Preview failed: " of a refresh's preview).
  expect(lines[0]!.replace(/^ {4}error: (?:Preview failed: |Refresh failed: )?/, ""), out).toMatch(new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  expect(out).not.toMatch(/^\s+at /m);
  expect(out).not.toMatch(/Update User|Get User|Delete User|Error: /);
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  silent = await startSilentListener();
  silentUrl = silent.url;
  closedUrl = `http://127.0.0.1:${await refusedPort()}`;
  strict = createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ success: 0, error: { code: "invalid_name", message: "name is on the service's list of reserved names" } })),
    );
  });
  await new Promise<void>((resolve) => strict.listen(0, "127.0.0.1", resolve));
  strictUrl = `http://127.0.0.1:${(strict.address() as net.AddressInfo).port}`;
  env = createPulumiTestEnv("engine-errors");
  writeProgram();
  expect((await pulumi(["stack", "init", "dev"])).code).toBe(0);
});
afterAll(async () => {
  await silent?.close();
  await new Promise((resolve) => strict?.close(resolve));
  await server?.close();
  env?.cleanup();
});

describe("the service's failures, as `pulumi` prints them", () => {
  it("up with nothing listening: the create, the address, ECONNREFUSED, and what to check", async () => {
    const up = await pulumi(["up", "--yes", "--skip-preview"], { USER_GROUPS_BASE_URL: closedUrl, USER_GROUPS_API_KEY: KEY });
    expect(up.code).not.toBe(0);
    expectOneLine(
      up.out,
      `Creating the user group (GET ${closedUrl}/api/user) for user_group_id "acme" failed after 2 attempts: no answer from ${closedUrl} (ECONNREFUSED)`,
    );
    expect(up.out).toContain(
      "Nothing answered there: check the base URL (USER_GROUPS_BASE_URL or the stack's config user-groups:baseUrl) and that the service is up and reachable from here. Then run again.",
    );
  });

  it("up against a service that never answers: a timeout, the wait's variable, a refresh first", async () => {
    const up = await pulumi(["up", "--yes", "--skip-preview"], { USER_GROUPS_BASE_URL: silentUrl, USER_GROUPS_API_KEY: KEY });
    expect(up.code).not.toBe(0);
    expectOneLine(up.out, `Creating the user group (GET ${silentUrl}/api/user) for user_group_id "acme" failed after`);
    expect(up.out).toMatch(/no answer from \S+ \(UND_ERR_HEADERS_TIMEOUT\)(: [^;.]*)?; the request may have been carried out\. The service did not answer in time/);
    expect(up.out).toContain("USER_GROUPS_HTTP_TIMEOUT_MS sets how long each attempt waits. Then run again (a refresh first, if the request may have been carried out).");
  });

  it("up against a service that refuses the group's name: the input to change", async () => {
    const up = await pulumi(["up", "--yes", "--skip-preview"], { USER_GROUPS_BASE_URL: strictUrl, USER_GROUPS_API_KEY: KEY });
    expect(up.code).not.toBe(0);
    expectOneLine(
      up.out,
      `Creating the user group (GET ${strictUrl}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 400 invalid_name: name is on the service's list of reserved names. ` +
        "The service refused the group's name: change name of this UserGroup to meet the service's rules; nothing was changed.",
    );
  });
});

// One stack taken through the rest (story.ts): the base URL as config, the key in the environment (allowed: no URL
// in the environment); a rejected key's refresh and destroy; then the config removed and the URL moved to the
// environment. One up serves both refusals.
const step = story();

describe("a recorded config: a rejected key, then pulumi config rm user-groups:baseUrl", () => {
  step("refresh and destroy with a rejected key: a read and a delete, each with the key's fix", async () => {
    expect((await pulumi(["config", "set", "user-groups:baseUrl", server.url])).code).toBe(0);
    const up = await pulumi(["up", "--yes", "--skip-preview"], { USER_GROUPS_API_KEY: KEY });
    expect(up.code, up.out).toBe(0);
    const wrong = { USER_GROUPS_API_KEY: "not-a-key-of-this-server-01" };

    const refresh = await pulumi(["refresh", "--yes", "--skip-preview"], wrong);
    expect(refresh.code).not.toBe(0);
    expectOneLine(
      refresh.out,
      `Reading the user group (PUT ${server.url}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 401 unauthorized`,
    );
    expect(refresh.out).toContain(
      "The service rejected the API key (wrong, revoked or rotated): set USER_GROUPS_API_KEY or the stack's config user-groups:apiKey to a current key of that environment. " +
        "A plain `pulumi refresh` uses the config the last `pulumi up` recorded: after changing the stack's config, run `pulumi refresh --run-program`.",
    );
    expect(refresh.out).not.toContain("not-a-key-of-this-server-01");

    const destroy = await pulumi(["destroy", "--yes", "--skip-preview"], wrong);
    expect(destroy.code).not.toBe(0);
    expectOneLine(destroy.out, `Deleting the user group (DELETE ${server.url}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 401 unauthorized`);
    expect(destroy.out).toContain("The service rejected the API key");
    expect(server.groups().map((group) => group.user_group_id)).toEqual(["acme"]);
  }, 300_000);

  step("after the config is removed, refresh says the recorded config is in use and names the fix; doing what it says works", async () => {
    // Moved to the environment, under another spelling of the same server; config removed.
    expect((await pulumi(["config", "rm", "user-groups:baseUrl"])).code).toBe(0);
    const moved = { USER_GROUPS_BASE_URL: server.url.replace("127.0.0.1", "localhost"), USER_GROUPS_API_KEY: KEY };

    const refresh = await pulumi(["refresh", "--yes", "--skip-preview"], moved);
    expect(refresh.code).not.toBe(0);
    expectOneLine(refresh.out, "The base URL in stack config for the default profile is not the environment's");
    expect(refresh.out).toContain(
      "A plain `pulumi refresh` runs with the configuration the last `pulumi up` recorded in the state, not the stack's current one: " +
        "remove user-groups:baseUrl from the stack's config if it is still there (`pulumi config rm user-groups:baseUrl`), then run `pulumi refresh --run-program`",
    );
    expect(refresh.out).not.toContain(KEY);

    // As it says: the config is gone already, so --run-program.
    const withProgram = await pulumi(["refresh", "--yes", "--skip-preview", "--run-program"], moved);
    expect(withProgram.code, withProgram.out).toBe(0);
    const again = await pulumi(["refresh", "--yes", "--skip-preview", "--expect-no-changes"], moved);
    expect(again.code, again.out).toBe(0);
    const destroy = await pulumi(["destroy", "--yes", "--skip-preview"], moved);
    expect(destroy.code, destroy.out).toBe(0);
    expect(server.groups()).toEqual([]);
  }, 400_000);
});
