// The plugin found on PATH (the unpacked tarball's directory, nothing
// installed in PULUMI_HOME): a YAML program runs on it, and SDKs for the other
// Pulumi languages are generated from its schema with `pulumi package gen-sdk`:
// the Go SDK (and a program using it) compiles with `go build`; the Python SDK
// is written and byte-compiles; the .NET SDK is written (no .NET toolchain here
// to compile it). scripts/ensure-sdkgen-hosts says why the language hosts that
// generate are our own build.
import { execFile, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { INPUT_DESCRIPTIONS } from "../../provider/logic/descriptions";
import { type CliEnv, createCliEnv, pluginTarball, toolDir } from "./support";

const run = promisify(execFile);

let base: CliEnv;
let env: CliEnv;
let pluginDir: string;
/** The plugin as `pulumi package` commands take it when it is not installed: its executable's path. */
let plugin: string;

beforeAll(() => {
  base = createCliEnv("plugin-sdk");
  pluginDir = path.join(base.workDir, "..", "plugin");
  mkdirSync(pluginDir);
  execFileSync("tar", ["-xzf", pluginTarball(), "-C", pluginDir]);
  env = createCliEnv("plugin-sdk-path", [pluginDir, toolDir("sdkgenBinDir")]);
  plugin = path.join(pluginDir, "pulumi-resource-user-groups");
});
afterAll(() => {
  env.cleanup();
  base.cleanup();
});

describe("SDKs generated from the plugin found on PATH", { timeout: 240_000 }, () => {
  it("a YAML program runs on the plugin found on PATH, with nothing installed", async () => {
    const key = "sdk-test-key-testing-0001";
    const server: FakeServer = await startFakeServer({ port: 0, apiKeys: [{ key, environment: "Testing" }] });
    try {
      const program = path.join(env.workDir, "program");
      mkdirSync(program);
      writeFileSync(
        path.join(program, "Pulumi.yaml"),
        ["name: on-path", "runtime: yaml", "resources:", "  acme:", "    type: user-groups:index:UserGroup", "    properties:", "      name: Acme", "      userGroupId: acme", ""].join("\n"),
      );
      const credentials = { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: key };
      await env.pulumi(["stack", "init", "test"], { cwd: program });
      const { stdout, stderr } = await env.pulumi(["up", "--yes", "--skip-preview"], { cwd: program, env: credentials });
      expect(stderr + stdout).toContain(`using pulumi-resource-user-groups from $PATH at ${plugin}`);
      expect(stdout).toContain("user-groups:index:UserGroup");
      expect(server.groups().map((group) => group.user_group_id)).toEqual(["acme"]);
      await env.pulumi(["destroy", "--yes", "--skip-preview"], { cwd: program, env: credentials });
      expect(server.groups()).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("the Go SDK, and a program declaring a UserGroup with it, compile with go build", async () => {
    await env.pulumi(["package", "gen-sdk", plugin, "--language", "go", "--out", "sdk"]);
    const sdk = path.join(env.workDir, "sdk", "go");
    const source = readFileSync(path.join(sdk, "userGroup.go"), "utf8");
    expect(source).toContain(`// ${INPUT_DESCRIPTIONS.userGroupId}`);
    expect(source).toMatch(/AdditionalSecretOutputs\(\[\]string\{\s*"token",/);
    // The module files: gen-sdk writes none; these pin the SDK at the engine's version.
    cpSync(path.join(__dirname, "go-sdk"), sdk, { recursive: true });
    mkdirSync(path.join(sdk, "example"));
    writeFileSync(
      path.join(sdk, "example", "main.go"),
      `package main

import (
	"example.com/pulumi-user-groups/sdk/go/usergroups"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		acme, err := usergroups.NewUserGroup(ctx, "acme", &usergroups.UserGroupArgs{
			Name:        pulumi.String("Acme Corp"),
			UserGroupId: pulumi.String("acme"),
			Mapping:     pulumi.StringMap{"sales": pulumi.String("warehouse-eu")},
			Properties:  pulumi.Any(map[string]any{"region": "eu"}),
		})
		if err != nil {
			return err
		}
		ctx.Export("token", acme.Token)
		return nil
	})
}
`,
    );
    const goEnv = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false -mod=readonly -trimpath", GOTOOLCHAIN: "local" };
    await run("go", ["build", "-o", `${path.join(env.workDir, "bin")}${path.sep}`, "./..."], { cwd: sdk, env: goEnv, maxBuffer: 8 * 1024 * 1024 }).catch((error: { stderr?: string; message: string }) => {
      throw new Error(`go build failed: ${error.message}\n${error.stderr ?? ""}`);
    });
    expect(existsSync(path.join(env.workDir, "bin", "example"))).toBe(true);
  });

  it("the Python SDK is written and byte-compiles", async () => {
    await env.pulumi(["package", "gen-sdk", plugin, "--language", "python", "--out", "sdk"]);
    const pkg = path.join(env.workDir, "sdk", "python", "pulumi_user_groups");
    expect(readFileSync(path.join(pkg, "user_group.py"), "utf8")).toContain(INPUT_DESCRIPTIONS.rotationTrigger);
    await run("python3", ["-m", "compileall", "-q", pkg]);
  });

  it("the .NET SDK is written, without going to the network for its logo", async () => {
    await env.pulumi(["package", "gen-sdk", plugin, "--language", "dotnet", "--out", "sdk"]);
    const sdk = path.join(env.workDir, "sdk", "dotnet");
    const source = readFileSync(path.join(sdk, "UserGroup.cs"), "utf8");
    expect(source).toContain("namespace PulumiUserGroups.UserGroups");
    expect(source).toContain(`/// ${INPUT_DESCRIPTIONS.userGroupId}`);
    expect(existsSync(path.join(sdk, "PulumiUserGroups.UserGroups.csproj"))).toBe(true);
    expect(readFileSync(path.join(sdk, "logo.png")).subarray(1, 4).toString()).toBe("PNG");
  });
});
