// The SDKs as a user gets them, and the one home they all name.
// - The plugin found on PATH (the unpacked tarball's directory, nothing
//   installed in PULUMI_HOME): a YAML program runs on it, and it serves exactly
//   the checked-in sdk/schema.json.
// - `npm run sdk` regenerates sdk/ byte for byte (into a temporary directory),
//   so the schema and the checked-in SDKs cannot drift apart.
// - package.json, the schema, the Go module, the Python and .NET packages all
//   name the canonical home of provider/plugin/home.ts.
// - Go: a user's module requiring the SDK's module (a `replace` to sdk/, as
//   before a release) builds a program with `go build`.
// - Python: PyPA's `build` makes the wheel and the sdist; the sdist installs
//   with pip into a fresh venv (its dependencies offline, from the wheelhouse
//   scripts/ensure-python-build caches) and imports (the wheel: release.test.ts).
// - .NET: the project is written (no .NET toolchain here to compile it).
import { execFile, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { INPUT_DESCRIPTIONS } from "../../provider/logic/descriptions";
import { GO_IMPORT_PATH, GO_MODULE, PACKAGE_JSON_HOME, PLUGIN_DOWNLOAD_URL, REPOSITORY_URL } from "../../provider/plugin/home";
import { packageSchema } from "../../provider/plugin/schema";
import { REPO_ROOT } from "../support/pulumi-env";
import { type CliEnv, createCliEnv, PLUGIN_VERSION, pipInstallAndImport, pluginTarball, pythonImported, pythonTools } from "./support";

const run = promisify(execFile);
const SDK = path.join(REPO_ROOT, "sdk");

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
  env = createCliEnv("plugin-sdk-path", [pluginDir]);
  plugin = path.join(pluginDir, "pulumi-resource-user-groups");
});
afterAll(() => {
  env.cleanup();
  base.cleanup();
});

/** Every file under `dir`, relative, sorted. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

async function runOrExplain(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<string> {
  try {
    return (await run(command, args, { ...options, maxBuffer: 32 * 1024 * 1024 })).stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(" ")} failed: ${failed.message}\n${failed.stdout ?? ""}\n${failed.stderr ?? ""}`);
  }
}

describe("the plugin on PATH and the checked-in SDKs", { timeout: 240_000 }, () => {
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

  it("the plugin serves exactly the checked-in sdk/schema.json", async () => {
    const { stdout } = await env.pulumi(["package", "get-schema", plugin]);
    expect(JSON.parse(stdout)).toEqual(JSON.parse(readFileSync(path.join(SDK, "schema.json"), "utf8")));
  });

  it("npm run sdk reproduces the checked-in sdk/ byte for byte", async () => {
    const out = path.join(env.workDir, "regenerated-sdk");
    await runOrExplain(process.execPath, [path.join(REPO_ROOT, "build/scripts/write-sdk.js"), "--out", out], { cwd: REPO_ROOT });
    const files = tree(out);
    expect(files).toEqual(tree(SDK));
    const differing = files.filter((file) => !readFileSync(path.join(out, file)).equals(readFileSync(path.join(SDK, file))));
    expect(differing, "sdk/ is out of date with the schema: run npm run sdk").toEqual([]);
  });

  it("every artefact names the one canonical home and the package's version", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as Record<string, unknown>;
    expect({ repository: pkg.repository, homepage: pkg.homepage, bugs: pkg.bugs }).toEqual(PACKAGE_JSON_HOME);
    expect(PACKAGE_JSON_HOME.repository.url).toBe(`git+${REPOSITORY_URL}.git`);
    expect(PLUGIN_DOWNLOAD_URL).toBe(`github://api.github.com/${new URL(REPOSITORY_URL).pathname.slice(1)}`);
    expect(GO_MODULE).toBe(`${REPOSITORY_URL.replace("https://", "")}/sdk`);

    const schema = JSON.parse(readFileSync(path.join(SDK, "schema.json"), "utf8")) as Record<string, unknown>;
    expect(schema).toEqual(packageSchema(PLUGIN_VERSION));
    expect(schema).toMatchObject({ version: PLUGIN_VERSION, homepage: REPOSITORY_URL, repository: REPOSITORY_URL, pluginDownloadURL: PLUGIN_DOWNLOAD_URL });
    expect(schema).toMatchObject({ language: { go: { importBasePath: GO_IMPORT_PATH } } });

    expect(readFileSync(path.join(SDK, "go.mod"), "utf8")).toMatch(new RegExp(`^module ${GO_MODULE.replaceAll(".", "\\.")}\n`));
    expect(GO_IMPORT_PATH).toBe(`${GO_MODULE}/go/usergroups`);
    expect(readFileSync(path.join(SDK, "go/usergroups/internal/pulumiUtilities.go"), "utf8")).toContain(`pulumi.PluginDownloadURL("${PLUGIN_DOWNLOAD_URL}")`);
    const pyproject = readFileSync(path.join(SDK, "python/pyproject.toml"), "utf8");
    expect(pyproject).toContain(`version = "${PLUGIN_VERSION}"`);
    expect(pyproject).toContain(`Homepage = "${REPOSITORY_URL}"`);
    expect(pyproject).toContain(`Repository = "${REPOSITORY_URL}"`);
    const csproj = readFileSync(path.join(SDK, "dotnet/PulumiUserGroups.UserGroups.csproj"), "utf8");
    expect(csproj).toContain(`<RepositoryUrl>${REPOSITORY_URL}</RepositoryUrl>`);
    expect(csproj).toContain(`<Version>${PLUGIN_VERSION}</Version>`);
    for (const file of ["go/usergroups/pulumi-plugin.json", "python/pulumi_user_groups/pulumi-plugin.json", "dotnet/pulumi-plugin.json"]) {
      expect(JSON.parse(readFileSync(path.join(SDK, file), "utf8")), file).toEqual({ resource: true, name: "user-groups", version: PLUGIN_VERSION, server: PLUGIN_DOWNLOAD_URL });
    }
  });

  it("Go: a user's module requiring the SDK's module builds a program with go build", async () => {
    const source = readFileSync(path.join(SDK, "go/usergroups/userGroup.go"), "utf8");
    expect(source).toContain(`// ${INPUT_DESCRIPTIONS.userGroupId}`);
    expect(source).toMatch(/AdditionalSecretOutputs\(\[\]string\{\s*"token",/);

    const user = path.join(env.workDir, "go-user");
    mkdirSync(user);
    const goVersion = /^go (\S+)$/m.exec(readFileSync(path.join(SDK, "go.mod"), "utf8"))![1];
    writeFileSync(
      path.join(user, "go.mod"),
      `module example.com/acme-groups\n\ngo ${goVersion}\n\nrequire ${GO_MODULE} v${PLUGIN_VERSION}\n\n// Until the module is tagged sdk/v${PLUGIN_VERSION} on its home: this checkout's.\nreplace ${GO_MODULE} => ${SDK}\n`,
    );
    writeFileSync(
      path.join(user, "main.go"),
      `package main

import (
	"${GO_IMPORT_PATH}"
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
    const goEnv = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false -trimpath", GOTOOLCHAIN: "local" };
    await runOrExplain("go", ["mod", "tidy"], { cwd: user, env: goEnv });
    expect(readFileSync(path.join(user, "go.mod"), "utf8")).toMatch(new RegExp(`^(require )?\\s*${GO_MODULE.replaceAll(".", "\\.")} v${PLUGIN_VERSION.replaceAll(".", "\\.")}$`, "m"));
    await runOrExplain("go", ["build", "-mod=readonly", "-o", "acme-groups", "."], { cwd: user, env: goEnv });
    expect(existsSync(path.join(user, "acme-groups"))).toBe(true);
  });

  it("Python: build makes a wheel and an sdist; the sdist installs with pip into a fresh venv and imports", async () => {
    const source = readFileSync(path.join(SDK, "python/pulumi_user_groups/user_group.py"), "utf8");
    expect(source).toContain(INPUT_DESCRIPTIONS.rotationTrigger);
    const work = path.join(env.workDir, "python");
    cpSync(path.join(SDK, "python"), path.join(work, "src"), { recursive: true }); // build writes its egg-info beside the sources
    await runOrExplain(path.join(pythonTools(), "bin/python"), ["-m", "build", "--no-isolation", "--outdir", path.join(work, "dist"), path.join(work, "src")], { cwd: work });
    const sdist = `pulumi_user_groups-${PLUGIN_VERSION}.tar.gz`;
    expect(readdirSync(path.join(work, "dist")).sort()).toEqual([sdist, `pulumi_user_groups-${PLUGIN_VERSION}-py3-none-any.whl`].sort());
    // (release.test.ts installs the wheel, by its URL in the served release.)
    expect(await pipInstallAndImport(work, path.join(work, "dist", sdist))).toEqual(pythonImported());
  });

  it(".NET: the project is written, its logo a placeholder rather than a download", () => {
    const sdk = path.join(SDK, "dotnet");
    const source = readFileSync(path.join(sdk, "UserGroup.cs"), "utf8");
    expect(source).toContain("namespace PulumiUserGroups.UserGroups");
    expect(source).toContain(`/// ${INPUT_DESCRIPTIONS.userGroupId}`);
    expect(readFileSync(path.join(sdk, "PulumiUserGroups.UserGroups.csproj"), "utf8")).toContain('<PackageReference Include="Pulumi" Version="3.*" />');
    expect(readFileSync(path.join(sdk, "version.txt"), "utf8")).toBe(PLUGIN_VERSION);
    expect(readFileSync(path.join(sdk, "logo.png")).subarray(1, 4).toString()).toBe("PNG");
  });
});
