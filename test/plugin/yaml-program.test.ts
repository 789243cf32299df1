// examples/yaml-groups end to end, the way a Pulumi YAML user runs it: the
// plugin installed from its tarball into a PULUMI_HOME of its own (no language
// host of ours, no Node.js program), the YAML host built from the Go module
// proxy, credentials in stack config (the key as a secret, through stdin),
// against the fake server. Then Pulumi's `import:` option on the plugin.
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { UserGroupsClient } from "../../provider/client/http-client";
import { readStoredState } from "../support/user-group-stack";
import { REPO_ROOT } from "../support/pulumi-env";
import { type CliEnv, createCliEnv, installPlugin } from "./support";

const KEY = "yaml-program-key-customer-01";

let server: FakeServer;
let env: CliEnv;

beforeAll(async () => {
  server = await startFakeServer({ port: 0, apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createCliEnv("plugin-yaml");
  await installPlugin(env);
  cpSync(path.join(REPO_ROOT, "examples/yaml-groups"), env.workDir, { recursive: true });
});
afterAll(async () => {
  await server.close();
  env.cleanup();
});

const group = (id: string) => server.groups().find((stored) => stored.user_group_id === id);

function editProgram(edit: (text: string) => string): void {
  const file = path.join(env.workDir, "Pulumi.yaml");
  writeFileSync(file, edit(readFileSync(file, "utf8")));
}

describe("a Pulumi YAML program on the installed user-groups plugin", { timeout: 240_000 }, () => {
  it("serves its schema from the installed plugin", async () => {
    const { stdout } = await env.pulumi(["package", "get-schema", "user-groups"]);
    const schema = JSON.parse(stdout) as { name: string; resources: Record<string, unknown> };
    expect(schema.name).toBe("user-groups");
    expect(Object.keys(schema.resources)).toEqual(["user-groups:index:UserGroup"]);
  });

  it("creates the declared groups, the token secret, no key or token in the state", async () => {
    await env.pulumi(["stack", "init", "test"]);
    await env.pulumi(["config", "set", "user-groups:baseUrl", server.url]);
    await env.pulumi(["config", "set", "--secret", "user-groups:apiKey"], { input: KEY });
    const { stdout: upOut, stderr: upErr } = await env.pulumi(["up", "--yes", "--skip-preview"]);
    expect(upOut + upErr).not.toContain("using pulumi-resource-user-groups from $PATH"); // the installed plugin ran

    const acme = group("acme");
    expect(acme).toMatchObject({ name: "Acme Corp", mapping: { sales: "warehouse-eu" }, properties: { region: "eu", seats: 40 } });
    expect(group("globex")).toMatchObject({ name: "Globex" });
    const shown = JSON.parse((await env.pulumi(["stack", "output", "--json"])).stdout) as Record<string, unknown>;
    expect(shown).toEqual({ acmeTeamId: acme!.team_id, acmeToken: "[secret]", globexEnvironment: "Customer" });
    const revealed = JSON.parse((await env.pulumi(["stack", "output", "--json", "--show-secrets"])).stdout) as Record<string, unknown>;
    expect(revealed.acmeToken).toBe(acme!.token);

    const state = readStoredState(env);
    for (const stored of server.groups()) expect(state).not.toContain(stored.token);
    expect(state).not.toContain(KEY);
    await env.pulumi(["preview", "--expect-no-changes"]);
  });

  it("updates in place and rotates on rotationTrigger", async () => {
    const before = { acme: group("acme")!, globex: group("globex")! };
    await env.pulumi(["config", "set", "seats", "41"]);
    editProgram((text) => text.replace('rotationTrigger: "2026-11"', 'rotationTrigger: "2026-12"'));
    const { stdout } = await env.pulumi(["up", "--yes", "--skip-preview"]);
    expect(stdout).toMatch(/~ 2 updated/);
    expect(group("acme")).toMatchObject({ team_id: before.acme.team_id, token: before.acme.token, properties: { region: "eu", seats: 41 } });
    expect(group("globex")?.team_id).toBe(before.globex.team_id);
    expect(group("globex")?.token).not.toBe(before.globex.token);
    await env.pulumi(["preview", "--expect-no-changes"]);
  });

  it("takes an existing group under management with the import option", async () => {
    const client = new UserGroupsClient({ baseUrl: server.url, apiKey: KEY });
    const { response } = await client.getOrCreate({ name: "Hooli", user_group_id: "hooli", properties: { tier: "gold" } });
    editProgram((text) =>
      text.replace(
        "\noutputs:",
        ["  hooli:", "    type: user-groups:index:UserGroup", "    properties:", "      name: Hooli", "      userGroupId: hooli", "      properties:", "        tier: gold", "    options:", "      import: hooli", "", "outputs:"].join("\n"),
      ),
    );
    const { stdout } = await env.pulumi(["up", "--yes", "--skip-preview"]);
    expect(stdout).toMatch(/= 1 imported/);
    expect(group("hooli")?.token).toBe(response.user_group.token); // the same group, untouched
    await env.pulumi(["preview", "--expect-no-changes"]);
  });

  it("destroys every group it manages, the imported one too", async () => {
    await env.pulumi(["destroy", "--yes", "--skip-preview"]);
    expect(server.groups()).toEqual([]);
  });

  it("takes credentials from an explicit provider, and a profile's from structured config", async () => {
    const program = path.join(env.workDir, "..", "providers");
    mkdirSync(program);
    writeFileSync(
      path.join(program, "Pulumi.yaml"),
      `name: providers
runtime: yaml
config:
  key:
    type: string
    secret: true
resources:
  explicit:
    type: pulumi:providers:user-groups
    properties:
      baseUrl: ${server.url}
      apiKey: \${key}
  viaExplicit:
    type: user-groups:index:UserGroup
    properties: { name: Explicit, userGroupId: explicit }
    options:
      provider: \${explicit}
  viaProfile:
    type: user-groups:index:UserGroup
    properties: { name: Profiled, userGroupId: profiled, profile: billing }
`,
    );
    const inProgram = { cwd: program };
    await env.pulumi(["stack", "init", "providers"], inProgram);
    await env.pulumi(["config", "set", "--secret", "key"], { ...inProgram, input: KEY });
    await env.pulumi(["config", "set", "--path", "user-groups:profiles.billing.baseUrl", server.url], inProgram);
    await env.pulumi(["config", "set", "--path", "--secret", "user-groups:profiles.billing.apiKey"], { ...inProgram, input: KEY });
    await env.pulumi(["up", "--yes", "--skip-preview"], inProgram);
    expect(server.groups().map((stored) => stored.user_group_id).sort()).toEqual(["explicit", "profiled"]);
    const state = readFileSync(path.join(env.backendDir, ".pulumi", "stacks", "providers", "providers.json"), "utf8");
    expect(state).not.toContain(KEY);
    await env.pulumi(["destroy", "--yes", "--skip-preview"], inProgram);
    expect(server.groups()).toEqual([]);
  });
});
