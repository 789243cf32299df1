// Errors at the engine's edge (issue #23 item 7): a missing Pulumi CLI, a wrong
// or empty passphrase, an unreachable or missing backend, a missing API key.
// The CLI says each in one line with a stable code and advice for a command
// line (environment variables; never `pulumi config set` where there is no
// Pulumi project), and with --json as {"error": {"code", "message"}} on stdout;
// library callers get UserGroupsErrors (never Pulumi's CommandError) whose
// advice names their options.
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { refusedPort } from "../../testkit/free-port";
import { REPO_ROOT } from "../support/pulumi-env";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

type AutomationModule = typeof import("../../provider/automation");
// As a service loads it: the built package.
const automation = createRequire(path.join(REPO_ROOT, "package.json"))("pulumi-user-groups/automation") as AutomationModule;

const PASSPHRASE = "the-right-passphrase";
const { server, env } = useStackFixture({ label: "cli-errors", apiKeys: ["cli-errors-key-00000000001"] });
let groupsFile: string;

beforeAll(async () => {
  groupsFile = path.join(env.workDir, "groups.yaml");
  writeFileSync(groupsFile, "groups:\n  - { name: Acme, userGroupId: acme }\n");
  // The stack exists, made with the right passphrase (a preview: no API call).
  const made = await cli({}, "preview", "--file", groupsFile, "--stack", "prod");
  expect(made.code, made.stderr).toBe(0);
});

function cli(extraEnv: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...env.envVars, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE, USER_GROUPS_BASE_URL: server.url, ...extraEnv },
  });
}

/** A failure under --json: exit 1, one JSON document on stdout, the same message on stderr once. */
function jsonFailure(run: CliRun, code: string): string {
  expect(run.code, run.stderr).toBe(1);
  const document = JSON.parse(run.stdout) as { schemaVersion: number; error: { code: string; message: string } };
  expect(document).toEqual({ schemaVersion: 1, error: { code, message: expect.any(String) } });
  expect(run.stderr).toBe(`user-groups: ${document.error.message}\n`);
  return document.error.message;
}

describe("the CLI at the engine's edge", () => {
  it("no Pulumi CLI on PATH: pulumi_cli_missing, saying to install it (not `code: -2`)", async () => {
    const emptyPath = mkdtempSync(path.join(env.workDir, "no-pulumi-"));
    const run = await cli({ PATH: emptyPath }, "preview", "--file", groupsFile, "--stack", "prod", "--json");
    const message = jsonFailure(run, "pulumi_cli_missing");
    expect(message).toMatch(/The Pulumi CLI \(`pulumi`\) was not found on PATH.*Install it/);
    expect(message).not.toMatch(/code: -2/);
  });

  it("a wrong passphrase: wrong_passphrase, said once, advice in environment variables", async () => {
    const human = await cli({ PULUMI_CONFIG_PASSPHRASE: "not-the-passphrase" }, "preview", "--file", groupsFile, "--stack", "prod");
    expect(human.code).toBe(1);
    expect(human.stderr.match(/passphrase/g)?.length, human.stderr).toBeLessThanOrEqual(3);
    expect(human.stderr.trim().split("\n")).toHaveLength(1);
    expect(human.stderr).toMatch(/does not decrypt the secrets of stack "prod".*Set PULUMI_CONFIG_PASSPHRASE/);
    expect(human.stderr).not.toMatch(/get stack secrets manager|pulumi config|`passphrase` option/);

    const json = await cli({ PULUMI_CONFIG_PASSPHRASE: "not-the-passphrase" }, "drift", "--stack", "prod", "--file", groupsFile, "--json");
    jsonFailure(json, "wrong_passphrase");
  });

  it("an empty passphrase (a fork's pull request): missing_passphrase before anything runs", async () => {
    const run = await cli({ PULUMI_CONFIG_PASSPHRASE: "" }, "preview", "--file", groupsFile, "--stack", "prod", "--json");
    expect(jsonFailure(run, "missing_passphrase")).toMatch(/is empty \(in GitHub Actions a secret is empty on a pull request from a fork\)/);
  });

  it("a missing or unreachable backend: backend_not_found / backend_unreachable, never its password", async () => {
    const missing = await cli({ PULUMI_BACKEND_URL: `file://${env.workDir}/no-such-dir` }, "preview", "--file", groupsFile, "--stack", "prod", "--json");
    expect(jsonFailure(missing, "backend_not_found")).toMatch(/The state backend does not exist \(file:\/\/.*no-such-dir\): no such file or directory.*Check PULUMI_BACKEND_URL \(or --backend-url\)/);

    const port = await refusedPort();
    const password = "pg-pass-w0rd-in-url";
    const unreachable = await cli({ PULUMI_BACKEND_URL: `postgres://admin:${password}@127.0.0.1:${port}/state?sslmode=disable&password=${password}` }, "refresh", "--stack", "prod", "--json");
    const message = jsonFailure(unreachable, "backend_unreachable");
    expect(message).toMatch(new RegExp(`cannot be reached \\(postgres://127\\.0\\.0\\.1:${port}/state\\): connection refused`));
    expect(unreachable.stdout + unreachable.stderr).not.toContain(password);
  });

  it("a missing API key: missing_credentials, once, naming the variable to set and no `pulumi config`", async () => {
    const run = await cli({ USER_GROUPS_API_KEY: "" }, "up", "--file", groupsFile, "--stack", "nokey", "--yes", "--json");
    const message = jsonFailure(run, "missing_credentials");
    expect(message).toBe('up of stack "nokey" failed: No API key for the default profile: set USER_GROUPS_API_KEY in the environment of user-groups.');
    expect(server.groups()).toEqual([]);
  });
});

describe("outside text reaches the terminal escaped (issue #23 item 5)", () => {
  const UNSAFE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
  const ATTACK = 'groups:\n  - { name: "x\\e[8m hidden", userGroupId: "x\\e[8m" }\n  - { name: "@org/team https://evil.example [a](http://x)", userGroupId: "rtl\\u202eevil" }\n';

  it("the up confirmation: the table before the prompt and the prompt itself carry no escape of an id's", async () => {
    const file = path.join(env.workDir, "attack.yaml");
    writeFileSync(file, ATTACK);
    const cliModule = createRequire(path.join(REPO_ROOT, "package.json"))(path.join(REPO_ROOT, "dist/provider/cli/user-groups.js")) as typeof import("../../provider/cli/user-groups");
    // main drives the engine with this process's environment, as the command does with its own.
    for (const [name, value] of Object.entries({ ...env.envVars, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE })) vi.stubEnv(name, value);
    let screen = "";
    let asked = "";
    const code = await cliModule
      .main(["up", "--file", file, "--stack", "attack"], {
        stdout: (text) => (screen += text),
        stderr: (text) => (screen += text),
        isTty: true,
        progressIsTty: false,
        env: {},
        confirm: async (question) => {
          asked = `${screen}${question}`;
          return false;
        },
      })
      .finally(() => vi.unstubAllEnvs());
    expect(code, screen).toBe(0);
    expect(asked).toMatch(/2 to create[\s\S]*Apply these changes\? \[y\/N\] $/);
    expect(screen + asked).not.toMatch(UNSAFE);
    expect(screen).toMatch(/nothing was changed/);
    expect(server.journal()).toEqual([]);
  });

  it("a refused groups file quotes the id escaped, on stderr and in --json", async () => {
    const file = path.join(env.workDir, "attack-invalid.yaml");
    writeFileSync(file, `${ATTACK}  - { name: " ", userGroupId: "fake\\n  - groups[9]: all fine\\e[2J" }\n`);
    const run = await cli({}, "validate", "--file", file);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toMatch(UNSAFE);
    expect(run.stderr).toContain('(userGroupId "fake\\u000a  - groups[9]: all fine\\u001b[2J")');
    expect(run.stderr.split("\n").filter((l) => l.includes("groups[9]"))).toHaveLength(1);
    const json = await cli({}, "validate", "--file", file, "--json");
    expect(json.stdout).not.toMatch(UNSAFE);
    expect(JSON.parse(json.stdout).error.code).toBe("invalid_groups");
  });
});

describe("library callers get UserGroupsErrors with advice in option names", () => {
  const options = (overrides: Record<string, unknown>) => {
    const { PULUMI_CONFIG_PASSPHRASE: _passphrase, ...envVars } = env.envVars;
    return {
      stack: "prod",
      workDir: path.join(env.workDir, ".user-groups"),
      passphrase: PASSPHRASE,
      envVars: { ...envVars, USER_GROUPS_BASE_URL: server.url },
      groups: [{ name: "Acme", userGroupId: "acme" }],
      ...overrides,
    };
  };

  async function failure(promise: Promise<unknown>): Promise<InstanceType<AutomationModule["UserGroupsError"]>> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(automation.UserGroupsError);
    expect((error as Error).name).not.toBe("CommandError");
    return error as InstanceType<AutomationModule["UserGroupsError"]>;
  }

  it("a wrong passphrase, from provision, drift, recover and the fleet", async () => {
    const wrong = options({ passphrase: "not-the-passphrase" });
    const errors = [
      await failure(automation.previewUserGroups(wrong)),
      await failure(automation.detectDrift(wrong)),
      await failure(automation.recoverStack(wrong)),
    ];
    const fleet = new automation.UserGroupFleet(wrong);
    errors.push(await failure(fleet.ensure({ name: "Acme", userGroupId: "acme" })));
    await fleet.close();
    for (const error of errors) {
      expect(error).toBeInstanceOf(automation.WrongPassphraseError);
      expect(error.code).toBe("wrong_passphrase");
      expect(error.message).toMatch(/as the `passphrase` option/);
    }
  });

  it("a missing backend directory and an empty passphrase", async () => {
    const missing = await failure(automation.previewUserGroups(options({ backendUrl: `file://${env.workDir}/nowhere` })));
    expect(missing.code).toBe("backend_not_found");
    expect(missing.message).toMatch(/Check the `backendUrl` option/);
    const empty = await failure(automation.previewUserGroups(options({ passphrase: "" })));
    expect(empty.code).toBe("missing_passphrase");
    expect(empty.message).toMatch(/Pass the `passphrase` option/);
  });

  it("a missing API key: MissingCredentialsError naming the options, never a command line", async () => {
    const error = await failure(automation.provisionUserGroups(options({ stack: "library-nokey" })));
    expect(error).toBeInstanceOf(automation.MissingCredentialsError);
    expect(error.code).toBe("missing_credentials");
    expect(error.message).toBe(
      'No API key for the default profile: set USER_GROUPS_API_KEY in the environment (or the `envVars` option), or pass `config: { "user-groups:apiKey": { value, secret: true } }`.',
    );
  });
});
