// The package as a new user meets it: the tarball from `npm pack` installed into a
// fresh TypeScript project beside the newest @pulumi/pulumi 3.x and TypeScript 5.x
// the npm registry has, and the README as the only guide. Checks that npm keeps
// one copy of the SDK, that the README's program (its Pulumi.yaml, package.json,
// tsconfig.json and index.ts, taken from the README itself) and its Fleet snippet
// compile with the tsconfig `pulumi new typescript` writes (the classic
// commonjs/node one and the current nodenext one; no skipLibCheck), that the
// published package.json runs no install script, and that arethetypeswrong finds
// no problem. Needs the npm registry; nothing is cached in the repository (npm's
// own cache is the user's; arethetypeswrong's prefix is scripts/ensure-attw's, under
// ~/.cache). dist/ is built by `pretest`.
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateCacheDir } from "../../provider/compile-cache-dir";

const REPO_ROOT = path.resolve(__dirname, "../..");
const run = promisify(execFile);

/** The README's fenced blocks that name a file after their language (```ts index.ts). */
function readmeFiles(readme: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const match of readme.matchAll(/^```[a-z]+ ([\w.-]+)\n([\s\S]*?)^```$/gm)) files.set(match[1]!, match[2]!);
  return files;
}

/** This Node first on PATH (npm picks versions by the running Node's engines), no npm lifecycle leftovers. */
function childEnv(): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")));
  return { ...inherited, PATH: [path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter) };
}

async function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run("npm", [...args, "--no-audit", "--no-fund"], { cwd, env: childEnv(), maxBuffer: 32 * 1024 * 1024 });
}

/** `tsc -p` of a config in the project: its diagnostics, or "" when it compiles. */
async function compile(project: string, config: string): Promise<string> {
  try {
    await run(path.join(project, "node_modules/.bin/tsc"), ["-p", config, "--noEmit", "--pretty", "false"], { cwd: project, env: childEnv() });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

/**
 * Copies an installed project's node_modules: hard links for the packages (npm replaces them, never writes into
 * them), a real copy of the one file npm rewrites in place (node_modules/.package-lock.json).
 */
async function copyModules(from: string, to: string): Promise<void> {
  await run("cp", ["-al", from, to]).catch(async () => {
    rmSync(to, { recursive: true, force: true });
    await run("cp", ["-a", from, to]);
  });
  const lock = path.join(to, ".package-lock.json");
  const text = readFileSync(lock);
  rmSync(lock);
  writeFileSync(lock, text);
}

/**
 * `npm install @pulumi/pulumi@<sdk> typescript@5` in `project`, as a user's project has them before ours: run once per
 * SDK, TypeScript, Node.js and npm version and project manifest, in the per-user cache (0700; written aside and moved
 * into place whole), and copied into `project`. The install of the package's tarball into it (the test's subject)
 * runs every time.
 */
async function installSdk(project: string, sdk: string, typescriptVersions: string | string[]): Promise<void> {
  const typescript = ([typescriptVersions].flat() as string[]).sort((a, b) => a.localeCompare(b, "en", { numeric: true })).at(-1)!;
  const npmVersion = (await npm(["--version"], project)).stdout.trim();
  const manifest = readFileSync(path.join(project, "package.json"), "utf8");
  const key = createHash("sha256").update(JSON.stringify([sdk, typescript, process.version, npmVersion, manifest])).digest("hex").slice(0, 16);
  const cache = privateCacheDir(process.env, os.homedir(), "consumer-projects");
  if (cache === undefined) {
    await npm(["install", `@pulumi/pulumi@${sdk}`, `typescript@${typescript}`], project);
    return;
  }
  const ready = path.join(cache, key);
  if (!existsSync(path.join(ready, "node_modules", ".package-lock.json"))) {
    const staging = mkdtempSync(`${ready}.partial-`);
    try {
      writeFileSync(path.join(staging, "package.json"), manifest);
      await npm(["install", `@pulumi/pulumi@${sdk}`, `typescript@${typescript}`], staging);
      try {
        renameSync(staging, ready); // whole or not at all: of two installs at once, the first to finish wins
      } catch (error) {
        if (!existsSync(path.join(ready, "node_modules", ".package-lock.json"))) throw error;
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    // Projects of earlier versions are not needed again.
    for (const other of readdirSync(cache)) if (other !== key && !other.includes(".partial-")) rmSync(path.join(cache, other), { recursive: true, force: true });
  }
  // The manifest and lockfile npm wrote (the README's, the two dependencies added), as real files; the packages linked.
  for (const file of ["package.json", "package-lock.json"]) writeFileSync(path.join(project, file), readFileSync(path.join(ready, file)));
  await copyModules(path.join(ready, "node_modules"), path.join(project, "node_modules"));
}

describe("the package in a fresh project beside the newest Pulumi SDK", { timeout: 300_000 }, () => {
  let tmp = "";
  let project = "";
  let tarball = "";
  let newestSdk = "";
  let installLog = "";
  const readme = readmeFiles(readFileSync(path.join(REPO_ROOT, "README.md"), "utf8"));

  beforeAll(async () => {
    tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ug-consumer-")));
    chmodSync(tmp, 0o700);
    // --ignore-scripts: `prepack` would rebuild dist/ under the other test files' feet.
    const packed = await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", tmp], REPO_ROOT);
    tarball = path.join(tmp, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);

    const versions = JSON.parse((await npm(["view", "@pulumi/pulumi@3", "version", "--json"], tmp)).stdout) as string | string[];
    newestSdk = ([versions].flat() as string[]).sort((a, b) => a.localeCompare(b, "en", { numeric: true })).at(-1)!;

    project = path.join(tmp, "project");
    mkdirSync(project);
    for (const file of ["Pulumi.yaml", "package.json", "tsconfig.json", "index.ts", "fleet.ts"]) {
      const text = readme.get(file);
      if (text === undefined) throw new Error(`README.md has no \`\`\`<lang> ${file} block`);
      writeFileSync(path.join(project, file), text);
    }
    // As a user would: a project that already has the newest SDK, then our package. The
    // README's own range for it stays; the tarball stands in for the registry.
    const pkg = JSON.parse(readFileSync(path.join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    delete pkg.dependencies["pulumi-user-groups"];
    writeFileSync(path.join(project, "package.json"), JSON.stringify(pkg, null, 2));
    await installSdk(project, newestSdk, JSON.parse((await npm(["view", "typescript@5", "version", "--json"], tmp)).stdout) as string | string[]);
    const installed = await npm(["install", tarball], project);
    installLog = installed.stdout + installed.stderr;
  }, 300_000);

  afterAll(() => {
    if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
  });

  it("shares the project's SDK: one @pulumi/pulumi, the newest 3.x", async () => {
    const { stdout } = await npm(["ls", "@pulumi/pulumi", "--all", "--parseable"], project);
    const copies = stdout.split("\n").filter((line) => line.endsWith(`${path.sep}@pulumi${path.sep}pulumi`));
    expect(copies).toEqual([path.join(project, "node_modules/@pulumi/pulumi")]);
    const sdk = JSON.parse(readFileSync(path.join(project, "node_modules/@pulumi/pulumi/package.json"), "utf8")) as { version: string };
    expect(sdk.version).toBe(newestSdk);
  });

  it("runs no install script of ours", () => {
    const manifest = JSON.parse(readFileSync(path.join(project, "node_modules/pulumi-user-groups/package.json"), "utf8")) as {
      scripts?: Record<string, string>;
    };
    const installScripts = ["preinstall", "install", "postinstall", "prepare"].filter((name) => manifest.scripts?.[name] !== undefined);
    expect(installScripts).toEqual([]);
    expect(installLog).not.toMatch(/pulumi-user-groups@[^\s]+ \((preinstall|install|postinstall|prepare):/);
  });

  /**
   * One `tsc` with the README's tsconfig (commonjs, node) of the README's program, its Fleet snippet and typed.ts
   * (what the declarations promise): the diagnostics of that one compile, for the two tests that read it
   * (each of them starts it if it has not run yet; a compile of the SDK's declarations is seconds of CPU).
   */
  let classic: Promise<string> | undefined;
  const classicCompile = (): Promise<string> =>
    (classic ??= (async () => {
      writeFileSync(
        path.join(project, "typed.ts"),
        `import { UserGroupFleet, type EnsuredGroup, type GroupSpec } from "pulumi-user-groups/automation";
import { startFakeServer, type FakeServerOptions } from "pulumi-user-groups/fake-server";
export async function typed(fleet: UserGroupFleet): Promise<string> {
  const spec: GroupSpec = { name: "Acme", userGroupId: "acme" };
  const group: EnsuredGroup = await fleet.ensure(spec);
  // @ts-expect-error a typo in a spec is a compile error
  await fleet.ensure({ name: "Acme", userGroupID: "acme" });
  const options: FakeServerOptions = { apiKeys: [{ key: "k-000000000001", environment: "Testing" }] };
  await startFakeServer(options);
  return group.token.toUpperCase();
}
`,
      );
      const tsconfig = JSON.parse(readme.get("tsconfig.json")!) as { compilerOptions: Record<string, unknown>; files: string[] };
      writeFileSync(path.join(project, "tsconfig.classic.json"), JSON.stringify({ ...tsconfig, files: ["index.ts", "fleet.ts", "typed.ts"] }));
      return compile(project, "tsconfig.classic.json");
    })());

  it("compiles the README's program and Fleet snippet with the tsconfig `pulumi new typescript` wrote (commonjs, node)", async () => {
    const tsconfig = JSON.parse(readme.get("tsconfig.json")!) as { compilerOptions: Record<string, unknown>; files: string[] };
    expect(tsconfig.compilerOptions).toMatchObject({ module: "commonjs", moduleResolution: "node", strict: true });
    expect(tsconfig.compilerOptions.skipLibCheck).toBeUndefined();
    // Every diagnostic but typed.ts's own (the next test's): none. A diagnostic starts a line; its continuation lines are indented.
    const diagnostics = (await classicCompile()).split(/\n(?=\S)/).filter((entry) => entry.trim() !== "" && !entry.startsWith("typed.ts("));
    expect(diagnostics).toEqual([]);
  });

  it("compiles them with the tsconfig `pulumi new typescript` writes now (nodenext)", async () => {
    const tsconfig = JSON.parse(readme.get("tsconfig.json")!) as { compilerOptions: Record<string, unknown> };
    writeFileSync(
      path.join(project, "tsconfig.nodenext.json"),
      JSON.stringify({ compilerOptions: { ...tsconfig.compilerOptions, module: "nodenext", moduleResolution: "nodenext" }, files: ["index.ts", "fleet.ts"] }),
    );
    expect(await compile(project, "tsconfig.nodenext.json")).toBe("");
  });

  it("type-checks what the declarations promise: typed specs, a token on every ensured group", async () => {
    // typed.ts in the classic compile: it and everything it loads compile clean (an unused @ts-expect-error fails it).
    expect(await classicCompile()).toBe("");
  });

  it("has no problem arethetypeswrong can find, under node10, node16 and bundler resolution", async () => {
    // Its own npm prefix, installed once and cached (scripts/ensure-attw), the tarball given by its path.
    const tools = execFileSync(path.join(REPO_ROOT, "scripts/ensure-attw"), { encoding: "utf8", env: childEnv(), stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1)!;
    let stdout: string;
    try {
      ({ stdout } = await run(path.join(tools, "node_modules/.bin/attw"), [tarball, "--format", "json"], { cwd: tmp, env: childEnv(), maxBuffer: 32 * 1024 * 1024 }));
    } catch (error) {
      stdout = String((error as { stdout?: string }).stdout ?? "");
    }
    // `problems` groups them by kind; `analysis.problems` lists them one by one.
    const report = JSON.parse(stdout) as { problems: Record<string, unknown>; analysis: { problems: unknown[]; entrypoints: Record<string, unknown> } };
    expect(report.problems).toEqual({});
    expect(report.analysis.problems).toEqual([]);
    expect(Object.keys(report.analysis.entrypoints)).toEqual(
      expect.arrayContaining([".", "./automation", "./fake-server", "./provider-runtime"]),
    );
  });
});
