// Issue #33, item 6: what a user of the dynamic resource meets at the engine's
// edge, run with the `pulumi` command on an on-disk program as a user runs it.
// - A Node.js older than 22 first on PATH is named at once, with the fix: by the
//   program (before anything registers) and by the dynamic provider's module
//   (what Pulumi's dynamic-provider process loads), instead of every create
//   failing with "Cannot read properties of undefined (reading 'bind')".
// - The `import:` option gives the adoptExisting hint as Pulumi's RunError: the
//   message alone, no stack trace.
// - After `pulumi config set user-groups:baseUrl` (and the key), a refresh says
//   exactly why it cannot see them (Pulumi refreshes with the provider
//   configuration the last up recorded) and what works; `--run-program` works.
import { execFile, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server/index";
import { PROVIDER_MODULE_TEXT } from "../../provider/resource/provider-shell";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";

const run = promisify(execFile);
const KEY = "engine-edge-key-00000000001";
let server: FakeServer;
let env: PulumiTestEnv;

/** The system's node (the image's is 20): the Node.js a user may have first on PATH. */
const OLD_NODE = "/usr/bin/node";
const oldNodeVersion = spawnSync(OLD_NODE, ["--version"], { encoding: "utf8" }).stdout?.trim() ?? "";
const haveOldNode = /^v(1\d|2[01])\./.test(oldNodeVersion);

interface Pulumi {
  code: number;
  out: string;
}

/** `pulumi <args>` in the program's directory; `extra` env on top of the test's. */
async function pulumi(args: string[], extra: NodeJS.ProcessEnv = {}, stdin?: string): Promise<Pulumi> {
  const child = run("pulumi", args, { cwd: env.workDir, env: { ...process.env, ...env.envVars, ...extra }, maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin?.end(stdin ?? "");
  return child.then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}\n${stderr}` }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, out: `${error.stdout ?? ""}\n${error.stderr ?? ""}` }),
  );
}

function writeProgram(options: string): void {
  writeFileSync(path.join(env.workDir, "Pulumi.yaml"), "name: engine-edge\nruntime: nodejs\n");
  writeFileSync(path.join(env.workDir, "package.json"), JSON.stringify({ name: "engine-edge", main: "index.js" }));
  writeFileSync(
    path.join(env.workDir, "index.js"),
    `const { UserGroup } = require("pulumi-user-groups");\nconst acme = new UserGroup("acme", { name: "Acme", userGroupId: "acme" }${options});\nexports.teamId = acme.teamId;\n`,
  );
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("engine-edge");
  writeProgram("");
  expect((await pulumi(["stack", "init", "dev"])).code).toBe(0);
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

const credentials = () => ({ USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY });

describe("a Node.js older than 22 first on PATH", () => {
  it.skipIf(!haveOldNode)(`(${oldNodeVersion}) is named at once by the program, with the fix, no stack trace, nothing sent`, async () => {
    const preview = await pulumi(["preview"], { ...credentials(), PATH: `${env.binDir}:${path.dirname(OLD_NODE)}:/bin` });
    expect(preview.code).not.toBe(0);
    expect(preview.out).toContain(
      `UserGroup "acme": pulumi-user-groups needs Node.js 22 or newer; it was started with ${oldNodeVersion} (${OLD_NODE}). Pulumi runs the program and its dynamic providers with the first node on PATH`,
    );
    expect(preview.out).not.toMatch(/reading 'bind'|unhandled exception|^\s+at /m);
    expect(server.journal()).toEqual([]);
  });

  it.skipIf(!haveOldNode)("is named by the dynamic provider's module as Pulumi's dynamic-provider process loads it", () => {
    // What Pulumi's host does with the stored __provider: requireFromString(text).handler(), in the program's directory.
    const host = `const m = new module.constructor(); m.paths = module.paths; m._compile(${JSON.stringify(PROVIDER_MODULE_TEXT)}, "provider.js");
try { m.exports.handler(); console.log("loaded"); } catch (e) { console.log(e.name + ": " + e.message); }`;
    const loaded = spawnSync(OLD_NODE, ["-e", host], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(loaded.stdout.trim()).toBe(
      `NodeTooOldError: The UserGroup dynamic provider (pulumi-user-groups) needs Node.js 22 or newer; it was started with ${oldNodeVersion} (${OLD_NODE}). Pulumi runs the program and its dynamic providers with the first node on PATH: put Node.js 22 or newer first on PATH (e.g. \`nvm use 22\`) and run again.`,
    );
    // The same module on this Node.js loads the provider.
    const current = spawnSync(process.execPath, ["-e", host], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(current.stdout.trim()).toBe("loaded");
  });
});

describe("the import option", () => {
  it("gives the adoptExisting hint as Pulumi's RunError: the message alone, no stack trace", async () => {
    writeProgram(', { import: "acme" }');
    try {
      const preview = await pulumi(["preview"], credentials());
      expect(preview.code).not.toBe(0);
      expect(preview.out).toContain(`error: UserGroup "acme": Pulumi's import option does not work for dynamic resources such as UserGroup. Remove it and set adoptExisting: true instead`);
      expect(preview.out).not.toMatch(/unhandled exception|ImportNotSupportedError|^\s+at /m);
    } finally {
      writeProgram("");
    }
  });
});

describe("refresh after pulumi config set", () => {
  it("says why the config just set is not seen, and --run-program (then plain refresh) works", async () => {
    const up = await pulumi(["up", "--yes"], credentials());
    expect(up.code, up.out).toBe(0);
    // As the README says: the base URL as config, the key through stdin; then no credentials in the environment.
    expect((await pulumi(["config", "set", "user-groups:baseUrl", server.url])).code).toBe(0);
    const setKey = await pulumi(["config", "set", "--secret", "user-groups:apiKey"], {}, KEY);
    expect(setKey.code, setKey.out).toBe(0);

    const refresh = await pulumi(["refresh", "--yes"]);
    expect(refresh.code).not.toBe(0);
    expect(refresh.out).toContain(
      "If you set it with `pulumi config set` after the last `pulumi up`: `pulumi refresh` runs with the configuration that up recorded in the state, not the stack's current one; run `pulumi refresh --run-program`",
    );
    expect(refresh.out).not.toContain(KEY);

    const withProgram = await pulumi(["refresh", "--yes", "--run-program"]);
    expect(withProgram.code, withProgram.out).toBe(0);
    const again = await pulumi(["refresh", "--yes", "--expect-no-changes"]);
    expect(again.code, again.out).toBe(0);
    const destroy = await pulumi(["destroy", "--yes"]);
    expect(destroy.code, destroy.out).toBe(0);
    expect(server.groups()).toEqual([]);
  });
});
