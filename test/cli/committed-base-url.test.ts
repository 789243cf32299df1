// Issue #33 item 2: the job's environment decides where the key goes. A pull
// request appending `user-groups:baseUrl` (or a profile's) to the committed
// `Pulumi.<stack>.yaml` would have `up --refresh`, drift or a preview send the
// API key to a listener of its choosing. Tried with such a listener: it must
// receive nothing, the run exits 2 once (not once per group), and the job can
// still allow a URL explicitly (USER_GROUPS_ALLOWED_BASE_URLS).
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { resolveCredentials } from "../../provider/logic/credentials";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "committed-url-key-0000001";
const TESTING_KEY = "committed-url-test-key-01";
let server: FakeServer;
let env: PulumiTestEnv;
let listener: http.Server;
let listenerUrl = "";
const received: string[] = [];

function cli(extraEnv: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: {
      ...process.env,
      ...env.envVars,
      PULUMI_BACKEND_URL: "",
      USER_GROUPS_BASE_URL: server.url,
      USER_GROUPS_API_KEY: KEY,
      USER_GROUPS_BASE_URL_TESTING: server.url,
      USER_GROUPS_API_KEY_TESTING: TESTING_KEY,
      ...extraEnv,
    },
  });
}

const settingsFile = () => path.join(env.workDir, ".user-groups", "Pulumi.prod.yaml");

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }, { key: TESTING_KEY, environment: "Testing" }] });
  listener = http.createServer((request, response) => {
    received.push(`${request.method} ${request.url} ${request.headers.authorization ?? ""}`);
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  env = createPulumiTestEnv("committed-base-url");
  writeFileSync(
    path.join(env.workDir, "groups.yaml"),
    "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n  - name: Acme (test)\n    userGroupId: acme\n    profile: testing\n",
  );
  const up = await cli({}, "up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
});
afterAll(async () => {
  await server?.close();
  await new Promise((resolve) => listener?.close(resolve));
  env?.cleanup();
});

describe("a base URL from committed stack config", () => {
  it("is used by a Pulumi program when the environment names none, refused when the environment names another, and allowed when the job lists it", () => {
    const config = (url: string) => (key: string) => (key === "user-groups:baseUrl" ? url : key === "user-groups:apiKey" ? "k" : undefined);
    expect(resolveCredentials(undefined, config("https://mine.example"), {}).baseUrl).toBe("https://mine.example");
    expect(resolveCredentials(undefined, config("https://same.example/"), { USER_GROUPS_BASE_URL: "https://same.example" }).baseUrl).toBe("https://same.example/");
    expect(() => resolveCredentials(undefined, config("https://evil.example"), { USER_GROUPS_BASE_URL: "https://real.example" })).toThrow(/USER_GROUPS_ALLOWED_BASE_URLS/);
    expect(() => resolveCredentials(undefined, config("https://evil.example"), { USER_GROUPS_HINTS: "cli" })).toThrow(/is not set/);
    expect(resolveCredentials(undefined, config("https://other.example"), { USER_GROUPS_BASE_URL: "https://real.example", USER_GROUPS_ALLOWED_BASE_URLS: "https://x.example, https://other.example/" }).baseUrl).toBe(
      "https://other.example",
    );
  });

  it("appended to Pulumi.prod.yaml by a pull request (with a new group): up --refresh, drift and preview --refresh exit 2 once, and the listener receives nothing", async () => {
    const before = readFileSync(settingsFile(), "utf8");
    appendFileSync(settingsFile(), `${before.includes("config:") ? "" : "config:\n"}  user-groups:baseUrl: ${listenerUrl}\n`);
    const groups = readFileSync(path.join(env.workDir, "groups.yaml"), "utf8");
    writeFileSync(path.join(env.workDir, "changed.yaml"), `${groups}  - name: Initech\n    userGroupId: initech\n`);
    for (const args of [
      ["up", "--file", "changed.yaml", "--stack", "prod", "--yes", "--refresh", "--json"],
      ["drift", "--stack", "prod", "--json"],
      ["preview", "--file", "changed.yaml", "--stack", "prod", "--refresh", "--json"],
    ]) {
      const run = await cli({}, ...args);
      expect(run.code, `${args[0]}: ${run.stderr}`).toBe(2);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe("base_url_not_allowed");
      // Once for the run, not once per group.
      expect(error.message.match(/is not the environment's/g)).toHaveLength(1);
      expect(error.message).not.toContain(KEY);
    }
    expect(received).toEqual([]);
    expect(server.groups().map((g) => g.user_group_id)).not.toContain("initech");
    writeFileSync(settingsFile(), before);
  });

  it("the same for a profile's URL; and a URL the job allows is used", async () => {
    const staging = path.join(env.workDir, ".user-groups", "Pulumi.staging.yaml");
    const groups = "groups:\n  - name: Hooli\n    userGroupId: hooli\n  - name: Hooli (test)\n    userGroupId: hooli\n    profile: testing\n";
    writeFileSync(path.join(env.workDir, "staging.yaml"), groups);
    const up = await cli({}, "up", "--file", "staging.yaml", "--stack", "staging", "--yes");
    expect(up.code, up.stderr).toBe(0);
    const before = readFileSync(staging, "utf8");
    writeFileSync(path.join(env.workDir, "more-testing.yaml"), `${groups}  - name: Initech (test)\n    userGroupId: initech\n    profile: testing\n`);
    appendFileSync(staging, `${before.includes("config:") ? "" : "config:\n"}  user-groups:profiles:\n    testing:\n      baseUrl: ${listenerUrl}\n`);
    const refused = await cli({}, "up", "--file", "more-testing.yaml", "--stack", "staging", "--yes", "--json");
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stdout).toContain("base_url_not_allowed");
    expect(refused.stdout).toContain('profile \\"testing\\"');
    expect(refused.stdout).toContain("USER_GROUPS_BASE_URL_TESTING");
    expect(received).toEqual([]);
    writeFileSync(staging, before);
    // The job allows the committed URL explicitly (its own USER_GROUPS_BASE_URL names another).
    appendFileSync(staging, `${before.includes("config:") ? "" : "config:\n"}  user-groups:profiles:\n    testing:\n      baseUrl: ${server.url}/\n`);
    const allowed = await cli(
      { USER_GROUPS_BASE_URL_TESTING: "https://elsewhere.example", USER_GROUPS_ALLOWED_BASE_URLS: server.url },
      "up", "--file", "more-testing.yaml", "--stack", "staging", "--yes",
    );
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(server.groups().some((g) => g.user_group_id === "initech" && g.environment === "Testing")).toBe(true);
    expect(received).toEqual([]);
  });
});
