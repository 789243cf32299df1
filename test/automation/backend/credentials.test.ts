// Issue 23 item 2: a backend URL's password lives in the environment only. With
// a real PostgreSQL backend, and a password holding every character a URL treats
// specially: never in a file (work directory, PULUMI_HOME), never in --json,
// a summary or a table, never in an error of the CLI, the library or the fleet
// (an unreachable backend makes Pulumi itself quote the URL).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { inspect } from "node:util";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusedPort } from "../../../testkit/free-port";
import { type PostgresServer, startPostgres } from "../../../testkit/postgres";
import { REPO_ROOT } from "../../support/pulumi-env";
import { useStackFixture } from "../../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../../support/user-groups-cli";

type AutomationModule = typeof import("../../../provider/automation");
const automation = createRequire(path.join(REPO_ROOT, "package.json"))("pulumi-user-groups/automation") as AutomationModule;

/** "@" and ":" raw (Go reads them), "/", "%", "#", "?" and non-ASCII percent-encoded in the URL. */
const PASSWORD = "Pw@ss:w/rd%#?é✓-x";
const WRITTEN = "Pw@ss:w%2Frd%25%23%3F%C3%A9%E2%9C%93-x";

/** Every spelling of the password a text could carry. */
function spellings(): string[] {
  const goEscaped = [...Buffer.from(PASSWORD, "utf8")]
    .map((b) => (/[A-Za-z0-9\-_.~$&+,;=]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
  return [...new Set([PASSWORD, WRITTEN, encodeURIComponent(PASSWORD), goEscaped, goEscaped.toLowerCase(), WRITTEN.toLowerCase()])];
}

function expectNoPassword(text: string, where: string): void {
  for (const spelling of spellings()) expect(text.includes(spelling), `${where} holds ${spelling}`).toBe(false);
}

/** Every file under a directory, as text (Pulumi's own log files gunzipped). */
function filesUnder(dir: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const stats = statSync(file, { throwIfNoEntry: false });
    if (stats?.isDirectory()) out.push(...filesUnder(file));
    else if (stats?.isFile()) {
      const bytes = readFileSync(file);
      let text = bytes.toString("latin1") + bytes.toString("utf8");
      if (bytes[0] === 0x1f && bytes[1] === 0x8b) text += gunzipSync(bytes).toString("utf8");
      out.push([file, text]);
    }
  }
  return out;
}

/** All an error carries: message, stack, cause chain, captured CLI output, own fields. */
function everythingOf(error: unknown): string {
  return `${String(error)}\n${inspect(error, { depth: 8, showHidden: false })}\n${JSON.stringify(error) ?? ""}`;
}

const { server, env, envVars } = useStackFixture({ label: "credentials", apiKeys: ["credentials-test-key-0001"] });
let postgres: PostgresServer;
let backendUrl: string;
let displayedUrl: string;

beforeAll(async () => {
  // A server that asks for the password over TCP: a run that works got it, through PGPASSWORD (the URL Pulumi sees has none).
  postgres = await startPostgres({ password: PASSWORD });
  backendUrl = postgres.backendUrl.replace("postgres://postgres@", `postgres://postgres:${WRITTEN}@`);
  displayedUrl = postgres.backendUrl.replace("postgres://postgres@", "postgres://");
  expect(backendUrl).toContain(WRITTEN);
  writeFileSync(path.join(env.workDir, "groups.yaml"), "groups:\n  - { name: Acme, userGroupId: acme }\n");
});
afterAll(async () => {
  postgres?.stop();
});

function cli(url: string, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...envVars({ PULUMI_BACKEND_URL: url }) },
  });
}

describe("a postgres:// backend URL with a password", () => {
  it("works from the environment, and the password is in no output, summary or file", async () => {
    const printed: string[] = [];
    const up = await cli(backendUrl, "up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--json", "--summary-file", "summary.md");
    printed.push(up.stdout, up.stderr);
    expect(up.code, up.stderr).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({ operation: "up", backendUrl: displayedUrl, summary: { create: 1 } });
    expect(server.groups().map((g) => g.user_group_id)).toEqual(["acme"]);

    const drift = await cli(backendUrl, "drift", "--file", "groups.yaml", "--stack", "prod", "--json");
    printed.push(drift.stdout, drift.stderr);
    expect(drift.code, drift.stderr).toBe(0);
    expect(JSON.parse(drift.stdout)).toMatchObject({ backendUrl: displayedUrl, inSync: true });

    const destroy = await cli(backendUrl, "destroy", "--file", "groups.yaml", "--stack", "prod", "--yes", "--json");
    printed.push(destroy.stdout, destroy.stderr);
    expect(destroy.code, destroy.stderr).toBe(0);
    expect(JSON.parse(destroy.stdout)).toMatchObject({ operation: "destroy", backendUrl: displayedUrl, summary: { delete: 1 } });

    expectNoPassword(printed.join("\n"), "the CLI's output");
    // The repository (work directory, summary) and Pulumi's home (its own logs, which name the backend URL): no file holds it.
    const files = [...filesUnder(env.workDir), ...filesUnder(env.envVars.PULUMI_HOME!)];
    expect(files.map(([file]) => path.relative(env.workDir, file))).toContain("summary.md");
    expect(files.some(([file, text]) => file.includes(`${path.sep}logs${path.sep}`) && text.includes("127.0.0.1"))).toBe(true);
    for (const [file, text] of files) expectNoPassword(text, file);
    // Each run's Pulumi workspace file (named after its private directory) went with it.
    expect(files.filter(([file]) => file.includes(`${path.sep}workspaces${path.sep}`))).toEqual([]);
  });

  it("a wrong password fails the run without showing either password", async () => {
    const wrong = backendUrl.replace(WRITTEN, "Wr0ng%2Fp%40ss");
    const run = await cli(wrong, "preview", "--file", "groups.yaml", "--stack", "prod");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/password authentication failed|authentication/i);
    expectNoPassword(run.stdout + run.stderr, "the failed preview");
    expect(run.stdout + run.stderr).not.toMatch(/Wr0ng/);
  });

  describe("an unreachable one: Pulumi quotes the URL, no error passes it on", () => {
    let unreachable: string;
    beforeAll(async () => {
      unreachable = `postgres://postgres:${WRITTEN}@127.0.0.1:${await refusedPort()}/postgres?sslmode=disable`;
    });

    it("the CLI, with and without --json", async () => {
      for (const json of [[], ["--json"]]) {
        const run = await cli(unreachable, "preview", "--file", "groups.yaml", "--stack", "prod", ...json);
        expect(run.code).toBe(1);
        expect(run.stderr).toMatch(/127\.0\.0\.1/);
        expectNoPassword(run.stdout + run.stderr, `preview ${json.join(" ")}`);
      }
    });

    it("the library: message, stack, cause chain and captured output", async () => {
      const error = await automation
        .previewUserGroups({ stack: "prod", workDir: path.join(env.workDir, "lib"), backendUrl: unreachable, passphrase: "credentials-test", groups: [] })
        .then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(everythingOf(error)).toMatch(/127\.0\.0\.1/);
      expectNoPassword(everythingOf(error), "previewUserGroups' error");
    });

    it("the fleet: ensure and list", async () => {
      const fleet = new automation.UserGroupFleet({
        stack: "fleet",
        workDir: path.join(env.workDir, "fleet"),
        passphrase: "credentials-test",
        envVars: { PULUMI_BACKEND_URL: unreachable },
        lockTimeoutMs: 0,
        batchWindowMs: 0,
      });
      const ensured = await fleet.ensure({ name: "A", userGroupId: "a" }).then(() => undefined, (e: unknown) => e);
      const listed = await fleet.list().then(() => undefined, (e: unknown) => e);
      await fleet.close();
      for (const error of [ensured, listed]) {
        expect(error).toBeInstanceOf(Error);
        expectNoPassword(everythingOf(error), "the fleet's error");
      }
    });
  });
});
