// What the plugin's tests share: the plugin tarball (packed once per content of
// dist/ and cached), the tools they need beyond the engine (the YAML host, built on
// first use), and surroundings for running the `pulumi` CLI in a directory of
// its own with a private PULUMI_HOME, as a user would.
import { type ExecFileOptions, execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { PLUGIN_DOWNLOAD_URL, REPOSITORY_URL } from "../../provider/plugin/home";
import { createPulumiTestEnv, type PulumiTestEnv, REPO_ROOT } from "../support/pulumi-env";

const run = promisify(execFile);

export const PLUGIN_VERSION = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;

const ENSURE_SCRIPTS = { pulumiYamlBinDir: "scripts/ensure-pulumi-yaml" } as const;
const toolDirs = new Map<keyof typeof ENSURE_SCRIPTS, string>();

/**
 * A tool's bin directory, built on first use in this file's process (the scripts cache it under ~/.cache and take a
 * lock, so files running side by side build it once): the YAML language host. Only the
 * files that need them wait for them; a failure fails those files with the script's message.
 */
export function toolDir(name: keyof typeof ENSURE_SCRIPTS): string {
  let dir = toolDirs.get(name);
  if (dir === undefined) {
    const stdout = execFileSync(path.join(REPO_ROOT, ENSURE_SCRIPTS[name]), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    dir = stdout.trim().split("\n").at(-1) ?? "";
    if (!dir) throw new Error(`${ENSURE_SCRIPTS[name]} printed no bin directory`);
    toolDirs.set(name, dir);
  }
  return dir;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => !file.endsWith(".map") && !file.endsWith(".d.ts"))
    .sort();
}

/** What the tarball is made of: dist/provider, dist/fake-server, the manifests and the packer. */
function tarballKey(): string {
  const hash = createHash("sha256");
  for (const dir of ["dist/provider", "dist/fake-server"]) {
    for (const file of filesUnder(path.join(REPO_ROOT, dir))) {
      const full = path.join(REPO_ROOT, dir, file);
      hash.update(`${dir}/${file}\0`);
      try {
        hash.update(readFileSync(full));
      } catch {
        // a directory
      }
    }
  }
  for (const file of ["package.json", "package-lock.json", "build/scripts/pack-plugin.js"]) hash.update(readFileSync(path.join(REPO_ROOT, file)));
  return hash.digest("hex").slice(0, 16);
}

/**
 * The plugin tarball `npm run plugin:pack` makes, for the built dist/. Packed
 * once per content (test files running side by side wait for one another).
 */
export function pluginTarball(): string {
  const cache = path.join(REPO_ROOT, ".work", "plugin-tarball");
  const key = tarballKey();
  const dir = path.join(cache, key);
  mkdirSync(dir, { recursive: true });
  const find = () => readdirSync(dir).find((file) => file.endsWith(".tar.gz"));
  if (find() === undefined) {
    execFileSync(
      "flock",
      [path.join(dir, ".lock"), "sh", "-c", 'ls "$1"/*.tar.gz >/dev/null 2>&1 || node "$2" --out "$1"', "sh", dir, path.join(REPO_ROOT, "build/scripts/pack-plugin.js")],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
  }
  const file = find();
  if (file === undefined) throw new Error(`no plugin tarball in ${dir}`);
  // Tarballs of earlier builds (about 10 MB each) are not needed again.
  for (const other of readdirSync(cache)) if (other !== key) rmSync(path.join(cache, other), { recursive: true, force: true });
  return path.join(dir, file);
}

export interface CliEnv extends PulumiTestEnv {
  /** The environment every `pulumi` command of the test runs with. */
  readonly vars: NodeJS.ProcessEnv;
  /** Runs `pulumi ARGS` in `cwd` (default: the work directory); rejects with its output on failure. */
  pulumi(args: string[], options?: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string }): Promise<{ stdout: string; stderr: string }>;
}

/**
 * The entries of a PATH, less those holding a `pulumi-resource-user-groups`
 * (npm puts the repository's node_modules/.bin first, and link-self.js put the
 * package's bins there): the engine prefers a plugin on PATH to an installed one.
 */
function withoutPlugin(searchPath: string): string[] {
  return searchPath.split(path.delimiter).filter((dir) => dir !== "" && !existsSync(path.join(dir, "pulumi-resource-user-groups")));
}

/**
 * A work directory, file backend and PULUMI_HOME of its own; on PATH: the
 * engine, the YAML host and Node.js >= 22 (this process's), nothing of ours
 * (no plugin unless `extraPath` holds one).
 */
export function createCliEnv(label: string, extraPath: string[] = []): CliEnv {
  const base = createPulumiTestEnv(label);
  const vars: NodeJS.ProcessEnv = {
    ...process.env,
    ...base.envVars,
    PATH: [...extraPath, base.binDir, toolDir("pulumiYamlBinDir"), path.dirname(process.execPath), ...withoutPlugin(process.env.PATH ?? "")].join(path.delimiter),
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
  };
  for (const key of Object.keys(vars)) if (key.startsWith("USER_GROUPS_")) delete vars[key];
  return {
    ...base,
    vars,
    async pulumi(args, options = {}) {
      const execOptions: ExecFileOptions & { encoding: "utf8" } = {
        cwd: options.cwd ?? base.workDir,
        env: { ...vars, ...options.env },
        encoding: "utf8",
        maxBuffer: 32 * 1024 * 1024,
      };
      const child = run("pulumi", args, execOptions);
      if (options.input !== undefined) {
        child.child.stdin?.end(options.input);
      }
      try {
        return await child;
      } catch (error) {
        const failed = error as { stdout?: string; stderr?: string; message: string };
        throw new Error(`pulumi ${args.join(" ")} failed: ${failed.message}\n${failed.stdout ?? ""}\n${failed.stderr ?? ""}`);
      }
    },
  };
}

/** What the engine's install of a tarball depends on besides the tarball: the engine binary (`pulumi` on the env's PATH). */
function engineKey(env: CliEnv): string {
  const binary = path.join(env.binDir, "pulumi");
  const stats = statSync(realpathSync(binary));
  return createHash("sha256").update(JSON.stringify([realpathSync(binary), stats.size, stats.mtimeMs])).digest("hex").slice(0, 16);
}

/**
 * The plugin tarball installed by `pulumi plugin install --file`, as a user installs it, into the env's PULUMI_HOME.
 * The install itself (about 5 s of CPU: 8,500 files) runs once per tarball and engine, into a PULUMI_HOME beside the
 * cached tarball (written aside, then moved into place whole: of two files installing at once, the first to finish
 * wins and the other uses its copy); each env gets a hard-linked copy of what it wrote.
 * `pulumi plugin install` from a tarball and from a server is tested as such by release.test.ts and pack.test.ts.
 */
export async function installPlugin(env: CliEnv): Promise<string> {
  const tarball = pluginTarball();
  const name = `resource-user-groups-v${PLUGIN_VERSION}`;
  const home = path.join(path.dirname(tarball), `pulumi-home-${engineKey(env)}`);
  const launcher = (root: string) => path.join(root, "plugins", name, "pulumi-resource-user-groups");
  if (!existsSync(launcher(home))) {
    const staging = mkdtempSync(`${home}.partial-`);
    try {
      await env.pulumi(["plugin", "install", "resource", "user-groups", PLUGIN_VERSION, "--file", tarball], { env: { PULUMI_HOME: staging } });
      if (!existsSync(launcher(staging))) throw new Error(`pulumi plugin install left no plugin in ${staging}`);
      try {
        renameSync(staging, home); // whole, or not at all: another file's install may have won
      } catch (error) {
        if (!existsSync(launcher(home))) throw error;
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const plugins = path.join(env.vars.PULUMI_HOME!, "plugins");
  mkdirSync(plugins, { recursive: true });
  for (const entry of readdirSync(path.join(home, "plugins"))) {
    await run("cp", ["-al", path.join(home, "plugins", entry), path.join(plugins, entry)]).catch(() => run("cp", ["-a", path.join(home, "plugins", entry), path.join(plugins, entry)]));
  }
  const installed = path.join(plugins, name);
  if (!existsSync(launcher(env.vars.PULUMI_HOME!))) throw new Error(`the plugin is not in ${installed}`);
  return installed;
}

export interface FolderServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** The path of every GET, in order, with its status. */
  readonly requests: { path: string; status: number }[];
  close(): Promise<void>;
}

/**
 * Serves the files under `root` over HTTP on 127.0.0.1 (a port of its own), as
 * a release host would: GET of a file's path answers it, anything else 404.
 */
export async function serveFolder(root: string): Promise<FolderServer> {
  const requests: { path: string; status: number }[] = [];
  const server = createServer((req, res) => {
    const urlPath = decodeURIComponent(new URL(req.url ?? "/", "http://127.0.0.1").pathname);
    const file = path.resolve(root, `.${urlPath}`);
    const inside = file.startsWith(`${path.resolve(root)}${path.sep}`);
    const found = req.method === "GET" && inside && existsSync(file) && statSync(file).isFile();
    requests.push({ path: urlPath, status: found ? 200 : 404 });
    if (!found) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** PyPA's build and a wheelhouse of the Python SDK's dependencies (scripts/ensure-python-build): its directory. */
export function pythonTools(): string {
  const stdout = execFileSync(path.join(REPO_ROOT, "scripts/ensure-python-build"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return stdout.trim().split("\n").at(-1)!;
}

/** What a program importing pulumi_user_groups sees: its metadata, its plugin file, a class of it. */
const PYTHON_IMPORT_CHECK = `
import importlib.metadata as metadata, importlib.resources as resources, json
import pulumi_user_groups
meta = metadata.metadata("pulumi_user_groups")
print(json.dumps({
  "version": meta["Version"],
  "license": meta["License-Expression"],
  "urls": meta.get_all("Project-URL"),
  "plugin": json.loads(resources.files("pulumi_user_groups").joinpath("pulumi-plugin.json").read_text()),
  "args": pulumi_user_groups.UserGroupArgs(name="Acme Corp", user_group_id="acme").user_group_id,
  "resource": pulumi_user_groups.UserGroup.__module__,
}))
`;

/**
 * `pip install ARTEFACT` (a file or a URL) into a fresh venv under `work`, its
 * dependencies from the cached wheelhouse (no index), then imports the SDK
 * there; returns what PYTHON_IMPORT_CHECK printed. The venv is removed.
 * The venv is made without a pip of its own (ensurepip installing pip into each
 * fresh venv cost half the test's CPU): pip of the cached tools installs into it
 * (`pip --python`), and without byte-compiling the dependencies (grpcio, protobuf,
 * pulumi: a third more), which the import compiles in memory as it needs them.
 * What is proved stays: the artefact and its dependencies install by pip into an
 * empty environment and import there.
 */
export async function pipInstallAndImport(work: string, artefact: string): Promise<unknown> {
  const venv = mkdtempSync(path.join(work, "venv-"));
  const explain = (what: string) => (error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`${what} failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
  };
  try {
    await run("python3", ["-m", "venv", "--without-pip", venv]).catch(explain("python3 -m venv"));
    const tools = pythonTools();
    const pip = ["-m", "pip", "--python", path.join(venv, "bin/python"), "install", "--no-compile", "--disable-pip-version-check", "--no-input", "--quiet"];
    await run(path.join(tools, "bin/python"), [...pip, "--no-index", "--find-links", path.join(tools, "wheelhouse"), artefact], {
      maxBuffer: 8 * 1024 * 1024,
    }).catch(explain(`pip install ${artefact}`));
    const { stdout } = await run(path.join(venv, "bin/python"), ["-c", PYTHON_IMPORT_CHECK]).catch(explain("import pulumi_user_groups"));
    return JSON.parse(stdout) as unknown;
  } finally {
    rmSync(venv, { recursive: true, force: true });
  }
}

/** What pipInstallAndImport returns for the SDK of this checkout. */
export function pythonImported(): unknown {
  return {
    version: PLUGIN_VERSION,
    license: "Apache-2.0",
    urls: [`Homepage, ${REPOSITORY_URL}`, `Repository, ${REPOSITORY_URL}`],
    plugin: { resource: true, name: "user-groups", version: PLUGIN_VERSION, server: PLUGIN_DOWNLOAD_URL },
    args: "acme",
    resource: "pulumi_user_groups.user_group",
  };
}
