// What a Pulumi program pays to import the package: every `pulumi preview`
// and `up` starts the program in a fresh Node process, so a program that only
// declares UserGroups must not load the HTTP client's undici and zod. Runs the
// built package (dist/, built by pretest) as an installed one would run.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compileCacheEnv } from "../../provider/compile-cache-dir";

const REPO_ROOT = path.resolve(__dirname, "../..");

/** Runs a script with the project's Node in the repository (where the package resolves by name); its stdout as JSON. */
function runNode(args: readonly string[], env: NodeJS.ProcessEnv = {}): unknown {
  const out = execFileSync(process.execPath, args, { cwd: REPO_ROOT, encoding: "utf8", env: { ...process.env, ...env } });
  return JSON.parse(out.trim().split("\n").at(-1) ?? "null");
}

const LOADED_LIBRARIES = `
const loaded = () => Object.keys(require.cache).filter((f) => /[\\\\/]node_modules[\\\\/](zod|undici)[\\\\/]/.test(f)).map((f) => f.includes("undici") ? "undici" : "zod");
const unique = (list) => [...new Set(list)].sort();
`;

describe("importing pulumi-user-groups", () => {
  const cacheDirs: string[] = [];
  afterAll(() => {
    for (const dir of cacheDirs) rmSync(dir, { recursive: true, force: true });
  });

  it("loads neither undici nor zod for a program that declares UserGroups, and loads them when the client is used", () => {
    const result = runNode([
      "-e",
      `${LOADED_LIBRARIES}
const pkg = require("pulumi-user-groups");
const afterImport = unique(loaded());
const kinds = [typeof pkg.UserGroup, typeof pkg.UserGroupApiError, typeof pkg.UserGroupExistsError, typeof pkg.MissingCredentialsError];
const client = new pkg.UserGroupsClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k".repeat(20) });
console.log(JSON.stringify({ afterImport, kinds, afterClient: unique(loaded()), isClient: client instanceof pkg.UserGroupsClient }));`,
    ]);
    expect(result).toEqual({
      afterImport: [],
      kinds: ["function", "function", "function", "function"],
      afterClient: ["undici", "zod"],
      isClient: true,
    });
  });

  it("offers every value by name to ES module importers", () => {
    const result = runNode([
      "--input-type=module",
      "-e",
      `import { UserGroup, UserGroupsClient, UserGroupApiError, UserGroupExistsError, MissingCredentialsError } from "pulumi-user-groups";
console.log(JSON.stringify([UserGroup, UserGroupsClient, UserGroupApiError, UserGroupExistsError, MissingCredentialsError].map((v) => typeof v)));`,
    ]);
    expect(result).toEqual(["function", "function", "function", "function", "function"]);
  });

  it("the provider runtime turns on Node's compile cache in a directory of the user's own, never the shared temp directory", () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "ug-compile-cache-"));
    cacheDirs.push(tmp);
    const home = path.join(tmp, "home");
    const sharedTmp = path.join(tmp, "shared-tmp");
    mkdirSync(home);
    mkdirSync(sharedTmp);
    const script = `const m = require("node:module"); const before = m.getCompileCacheDir() ?? null;
require("pulumi-user-groups/provider-runtime"); console.log(JSON.stringify({ before, after: m.getCompileCacheDir() ?? null }));`;
    const env = { HOME: home, TMPDIR: sharedTmp, XDG_CACHE_HOME: undefined, NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined };
    const on = runNode(["-e", script], env) as { before: string | null; after: string | null };
    expect(on.before).toBeNull();
    const own = path.join(home, ".cache", "pulumi-user-groups", "compile-cache");
    expect(on.after).toContain(own);
    expect(statSync(own).mode & 0o777).toBe(0o700);
    expect(readdirSync(on.after!, { recursive: true }).length).toBeGreaterThan(0);
    // Nothing in the shared temp directory, where another user could plant cache entries.
    expect(readdirSync(sharedTmp)).toEqual([]);
    // A directory the user chose is theirs to choose.
    const chosen = path.join(tmp, "chosen");
    expect((runNode(["-e", script], { ...env, NODE_COMPILE_CACHE: chosen }) as { after: string }).after).toContain(chosen);
    // Node's own switch turns it off.
    expect(runNode(["-e", script], { ...env, NODE_DISABLE_COMPILE_CACHE: "1" })).toEqual({ before: null, after: null });
  });

  it("a run hands the Node processes the engine starts the same private cache, unless the caller chose one or none", () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "ug-compile-cache-env-"));
    cacheDirs.push(tmp);
    const names = ["HOME", "XDG_CACHE_HOME", "NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"] as const;
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    try {
      for (const name of names) delete process.env[name];
      process.env.HOME = tmp;
      const own = path.join(tmp, ".cache", "pulumi-user-groups", "compile-cache");
      expect(compileCacheEnv()).toEqual({ NODE_COMPILE_CACHE: own });
      expect(statSync(own).mode & 0o777).toBe(0o700);
      expect(compileCacheEnv({ NODE_COMPILE_CACHE: path.join(tmp, "chosen") })).toEqual({});
      expect(compileCacheEnv({ NODE_DISABLE_COMPILE_CACHE: "1" })).toEqual({});
      process.env.NODE_DISABLE_COMPILE_CACHE = "1";
      expect(compileCacheEnv()).toEqual({});
    } finally {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});
