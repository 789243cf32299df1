// @ts-check
// A minimal Node.js language host for the Pulumi engine ("pulumi-language-nodejs").
//
// Why this exists: the engine runs on-disk programs (Pulumi.yaml with `runtime: nodejs`)
// through a language-host plugin. Pulumi ships a Go one, but it cannot be built offline
// here (the Go module proxy refuses its module), so scripts/ensure-pulumi installs this
// file next to a self-built engine instead. A real Pulumi install's own language host is
// always preferred; ensure-pulumi never installs this one where a real one exists.
//
// Protocol (pulumirpc.LanguageRuntime, proto/pulumi/language.proto), as the engine uses it:
//   * The engine starts the plugin as `pulumi-language-nodejs [flags] <engine address>`
//     (flags in Go syntax: --logtostderr, -v=N, --tracing <url>) and reads one line from
//     stdout: the port of a gRPC server on 127.0.0.1. Everything printed later on stdout or
//     stderr is shown to the user as program output.
//   * It then calls GetRequiredPackages (to install provider plugins), Run (once per
//     preview/update), and GetPluginInfo/About/... as needed, and finally interrupts us.
//   * Run does not execute the program in this process: it starts
//     `node @pulumi/pulumi/cmd/run <flags> <entry point>`, the SDK's own entry point, which
//     connects to the engine's resource monitor itself.
//
// Everything protocol-specific (gRPC, the generated message classes) is loaded from the
// program's own @pulumi/pulumi, because this file lives outside any node_modules tree.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const { createRequire } = require("node:module");
const path = require("node:path");

/**
 * The exit code with which @pulumi/pulumi/cmd/run says "the error was already shown to
 * the user": the engine should stop without printing anything more (RunResponse.bail).
 */
const EXIT_AFTER_USER_ACTIONABLE_MESSAGE = 32;

/** How long an interrupted child program gets before it is killed. */
const KILL_GRACE_MS = 5_000;

/** The engine is checked for liveness this often (as the Go host does). */
const HEALTH_CHECK_INTERVAL_MS = 5 * 60_000;

// ---------------------------------------------------------------------------------------
// Command line

/**
 * Parses the command line the way Go's `flag` package would for the flags the engine
 * passes to language plugins, and returns the flags and the engine address (the first
 * positional argument).
 * @param {string[]} argv
 * @returns {{ flags: Record<string, string | boolean>, engineAddress: string }}
 */
function parseArgs(argv) {
  // Flags that take no value. Any other flag takes a value, either `-f=v` or `-f v`.
  const booleanFlags = new Set(["logtostderr", "alsologtostderr", "logflow", "version", "help", "h"]);
  /** @type {Record<string, string | boolean>} */
  const flags = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      i++;
      break;
    }
    if (!arg.startsWith("-") || arg === "-") break; // Go stops at the first positional
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    if (eq >= 0) {
      flags[body.slice(0, eq)] = body.slice(eq + 1);
    } else if (booleanFlags.has(body)) {
      flags[body] = true;
    } else {
      flags[body] = argv[i + 1] ?? "";
      i++;
    }
  }
  return { flags, engineAddress: argv[i] ?? "" };
}

// ---------------------------------------------------------------------------------------
// Loading @pulumi/pulumi

/**
 * The pieces of @pulumi/pulumi this host needs: its directory, version, gRPC library and
 * generated protobuf stubs. Typed loosely: they are generated CommonJS without types here.
 * @typedef {object} Sdk
 * @property {string} dir
 * @property {string} version
 * @property {any} grpc
 * @property {any} languageGrpc
 * @property {any} language
 * @property {any} plugin
 * @property {any} empty
 */

/**
 * Finds the directory of the @pulumi/pulumi package that `dir` resolves (Node's module
 * resolution, i.e. node_modules in `dir` or any parent), or undefined.
 * @param {string} dir
 * @returns {string | undefined}
 */
function findSdkDir(dir) {
  const requireFromDir = createRequire(path.join(dir, "noop.js"));
  let entry;
  try {
    entry = requireFromDir.resolve("@pulumi/pulumi");
  } catch {
    return undefined;
  }
  // Walk up from the main module to the package root rather than resolving
  // "@pulumi/pulumi/package.json", which a package "exports" map may not expose.
  for (let d = path.dirname(entry); d !== path.dirname(d); d = path.dirname(d)) {
    const manifest = path.join(d, "package.json");
    if (fs.existsSync(manifest) && readJson(manifest)?.name === "@pulumi/pulumi") return d;
  }
  return undefined;
}

/**
 * Loads the gRPC library and stubs from the @pulumi/pulumi that `dir` resolves. gRPC is
 * loaded relative to @pulumi/pulumi itself so that the server and the stubs share one copy.
 * @param {string} dir
 * @returns {Sdk}
 */
function loadSdk(dir) {
  const sdkDir = findSdkDir(dir);
  if (!sdkDir) {
    throw new Error(
      `pulumi-language-nodejs: cannot find @pulumi/pulumi from ${dir}. ` +
        `It looks like the Pulumi SDK has not been installed: run npm install in ${dir}.`,
    );
  }
  const requireFromSdk = createRequire(path.join(sdkDir, "package.json"));
  return {
    dir: sdkDir,
    version: String(readJson(path.join(sdkDir, "package.json"))?.version ?? ""),
    grpc: requireFromSdk("@grpc/grpc-js"),
    languageGrpc: requireFromSdk("./proto/language_grpc_pb.js"),
    language: requireFromSdk("./proto/language_pb.js"),
    plugin: requireFromSdk("./proto/plugin_pb.js"),
    empty: requireFromSdk("google-protobuf/google/protobuf/empty_pb.js"),
  };
}

/**
 * @param {string} file
 * @returns {any} the parsed JSON, or undefined when it cannot be read or parsed
 */
function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// Program information and runtime options

/**
 * The `runtime.options` of Pulumi.yaml that this host understands (same defaults as the
 * Go host). `packagemanager` only matters for InstallDependencies.
 * @typedef {object} NodeOptions
 * @property {boolean} typescript  run TypeScript through ts-node (default true)
 * @property {string} tsconfig     tsconfig path for ts-node ("" = tsconfig.json if present)
 * @property {string[]} nodeargs   extra arguments for node
 * @property {string} packagemanager  auto | npm | yarn | pnpm | bun
 */

/**
 * @param {Record<string, unknown>} options
 * @returns {NodeOptions}
 */
function parseOptions(options) {
  /** @type {NodeOptions} */
  const result = { typescript: true, tsconfig: "", nodeargs: [], packagemanager: "auto" };
  if ("typescript" in options) {
    if (typeof options.typescript !== "boolean") throw new Error("typescript option must be a boolean");
    result.typescript = options.typescript;
  }
  if ("tsconfig" in options) {
    if (typeof options.tsconfig !== "string") throw new Error("tsconfigpath option must be a string");
    result.tsconfig = options.tsconfig;
  }
  if ("nodeargs" in options) {
    if (typeof options.nodeargs !== "string") throw new Error("nodeargs option must be a string");
    result.nodeargs = splitShellWords(options.nodeargs);
  }
  if ("packagemanager" in options) {
    const pm = options.packagemanager;
    if (typeof pm !== "string") throw new Error("packagemanager option must be a string");
    if (!["auto", "npm", "yarn", "pnpm", "bun"].includes(pm)) {
      throw new Error(`packagemanager option must be one of auto, npm, yarn, pnpm or bun, got "${pm}"`);
    }
    result.packagemanager = pm;
  }
  return result;
}

/**
 * Splits `nodeargs` like a POSIX shell would split words (quotes and backslashes), without
 * any expansion.
 * @param {string} text
 * @returns {string[]}
 */
function splitShellWords(text) {
  /** @type {string[]} */
  const words = [];
  let word = "";
  let inWord = false;
  /** @type {string | undefined} */
  let quote;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) word += text.charAt(++i);
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < text.length) {
      word += text.charAt(++i);
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`nodeargs: unterminated quote in ${JSON.stringify(text)}`);
  if (inWord) words.push(word);
  return words;
}

/**
 * The ProgramInfo the engine sends with most requests, as plain values. Older request
 * fields (pwd, program) are the fallback when `info` is absent.
 * @param {any} info a pulumirpc.ProgramInfo or undefined
 * @param {{ pwd?: string, program?: string }} [legacy]
 */
function programInfo(info, legacy = {}) {
  const programDirectory = info?.getProgramDirectory() || legacy.pwd || process.cwd();
  return {
    rootDirectory: info?.getRootDirectory() || programDirectory,
    programDirectory,
    // The engine always sends an entry point; "." means "the directory: package.json main".
    entryPoint: info?.getEntryPoint() || legacy.program || ".",
    /** @type {Record<string, unknown>} */
    options: info?.getOptions()?.toJavaScript() ?? {},
  };
}

/**
 * Converts the engine's config map to the JSON the SDK reads from PULUMI_CONFIG. Keys come
 * as `<namespace>:<name>`; like the Go host we present them in the older
 * `<namespace>:config:<name>` form, which every @pulumi/pulumi version understands.
 * @param {Array<[string, string]>} entries
 * @returns {string}
 */
function configJson(entries) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const [key, value] of entries) {
    const parts = key.split(":");
    if (parts.length === 2) out[`${parts[0]}:config:${parts[1]}`] = value;
    else if (parts.length === 3 && parts[1] === "config") out[key] = value;
    else throw new Error(`could not parse ${key} as a configuration key (configuration keys should be of the form \`<namespace>:<name>\`)`);
  }
  return JSON.stringify(out);
}

// ---------------------------------------------------------------------------------------
// Required packages (provider plugins)

/**
 * Finds the resource plugins a program needs: every package under the program
 * directory's node_modules whose package.json says `"pulumi": { "resource": true }`.
 * Unlike the Go host this only walks node_modules trees (not every source directory),
 * and skips unreadable or invalid manifests with a note on stderr.
 * Programs that only use dynamic providers (like ours) need nothing: the engine provides
 * the `pulumi-nodejs` dynamic-provider plugin itself.
 * @param {string} programDirectory
 * @returns {Array<{ name: string, version: string, server: string,
 *   parameterization?: { name: string, version: string, value: string },
 *   extension?: { name: string, version: string, value: string } }>}
 */
function findPluginPackages(programDirectory) {
  /** @type {ReturnType<typeof findPluginPackages>} */
  const found = [];
  const visited = new Set();

  /** @param {string} nodeModules */
  const walkNodeModules = (nodeModules) => {
    let real;
    try {
      real = fs.realpathSync(nodeModules);
    } catch {
      return;
    }
    if (visited.has(real)) return;
    visited.add(real);
    for (const entry of safeReaddir(real)) {
      if (entry.startsWith(".")) continue;
      if (entry.startsWith("@")) {
        for (const scoped of safeReaddir(path.join(real, entry))) visitPackage(path.join(real, entry, scoped));
      } else {
        visitPackage(path.join(real, entry));
      }
    }
  };

  /** @param {string} dir */
  const visitPackage = (dir) => {
    const manifest = readJson(path.join(dir, "package.json"));
    const pulumi = manifest?.pulumi;
    if (pulumi && pulumi.resource === true) {
      const name = pulumi.name || (String(manifest.name ?? "").startsWith("@pulumi/") ? manifest.name.slice("@pulumi/".length) : "");
      const version = String(pulumi.version || manifest.version || "");
      if (!name || !version) {
        process.stderr.write(`pulumi-language-nodejs: ignoring ${dir}: a plugin package needs a "pulumi.name" (or an @pulumi/ name) and a version\n`);
      } else {
        /** @param {any} p */
        const param = (p) => (p ? { name: String(p.name ?? ""), version: String(p.version ?? ""), value: String(p.value ?? "") } : undefined);
        found.push({
          name,
          version: version.startsWith("v") ? version : `v${version}`,
          server: String(pulumi.server ?? ""),
          parameterization: param(pulumi.parameterization),
          extension: param(pulumi.extensionParameterization),
        });
      }
    }
    walkNodeModules(path.join(dir, "node_modules"));
  };

  walkNodeModules(path.join(programDirectory, "node_modules"));
  return found;
}

/** @param {string} dir */
function safeReaddir(dir) {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The direct dependencies of the program (package.json dependencies and devDependencies)
 * with the versions installed, for GetProgramDependencies (`pulumi about`).
 * @param {string} programDirectory
 * @returns {Array<{ name: string, version: string }>}
 */
function programDependencies(programDirectory) {
  const manifest = readJson(path.join(programDirectory, "package.json"));
  if (!manifest) throw new Error(`no readable package.json in ${programDirectory}`);
  const requireFromProgram = createRequire(path.join(programDirectory, "noop.js"));
  const names = Object.keys({ ...manifest.devDependencies, ...manifest.dependencies }).sort();
  return names.map((name) => {
    const declared = String(manifest.dependencies?.[name] ?? manifest.devDependencies?.[name] ?? "");
    // Prefer the installed version; fall back to the declared range when not installed.
    for (const dir of requireFromProgram.resolve.paths(name) ?? []) {
      const installed = readJson(path.join(dir, name, "package.json"));
      if (installed?.version) return { name, version: String(installed.version) };
    }
    return { name, version: declared };
  });
}

// ---------------------------------------------------------------------------------------
// The server

/**
 * @param {Sdk} sdk
 * @param {{ engineAddress: string, tracing: string }} settings
 */
function createLanguageHost(sdk, settings) {
  const { grpc, language, plugin } = sdk;
  let engineAddress = settings.engineAddress;

  /**
   * Running program processes, so Cancel and shutdown can interrupt them.
   * @type {Set<import("node:child_process").ChildProcess>}
   */
  const running = new Set();

  /** @param {import("node:child_process").ChildProcess} child */
  const interrupt = (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGINT");
    setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }, KILL_GRACE_MS).unref();
  };

  /**
   * Wraps a unary handler: a thrown error becomes a gRPC error with its message.
   * @param {(call: any) => any} handler
   */
  const unary = (handler) => (/** @type {any} */ call, /** @type {Function} */ callback) => {
    Promise.resolve()
      .then(() => handler(call))
      .then(
        (response) => callback(null, response),
        (/** @type {any} */ err) => callback({ code: grpc.status.UNKNOWN, details: String(err?.message ?? err) }),
      );
  };

  /** @param {string} method */
  const unimplemented = (method) => (/** @type {any} */ call, /** @type {Function | undefined} */ callback) => {
    const error = { code: grpc.status.UNIMPLEMENTED, details: `method ${method} not implemented by this language host` };
    if (callback) callback(error);
    else call.emit("error", error);
  };

  /**
   * Run: executes the program once, for a preview (dryRun) or an update.
   * @param {any} call
   */
  const run = async (call) => {
    const req = call.request;
    const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
    const response = (/** @type {string} */ error, bail = false) => {
      const res = new language.RunResponse();
      res.setError(error);
      res.setBail(bail);
      return res;
    };

    if (!engineAddress) return response("when debugging or running explicitly, must call Handshake before Run");
    if (req.getAttachDebugger()) return response("this language host does not support --attach-debugger");

    /** @type {NodeOptions} */
    let opts;
    try {
      opts = parseOptions(info.options);
    } catch (err) {
      return response(/** @type {Error} */ (err).message);
    }
    /** @type {NodeJS.ProcessEnv} */
    let env;
    try {
      env = {
        ...process.env,
        PULUMI_CONFIG: configJson(req.getConfigMap().getEntryList()),
        PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(req.getConfigsecretkeysList()),
      };
    } catch (err) {
      return response(`failed to serialize configuration: ${/** @type {Error} */ (err).message}`);
    }
    if (opts.typescript) env.PULUMI_NODEJS_TYPESCRIPT = "true";
    if (opts.tsconfig) env.PULUMI_NODEJS_TSCONFIG_PATH = opts.tsconfig;

    // The SDK's runner must come from the program's own @pulumi/pulumi (the program talks
    // to the engine through that copy), not necessarily the one this host loaded.
    let runPath = process.env.PULUMI_LANGUAGE_NODEJS_RUN_PATH || "@pulumi/pulumi/cmd/run";
    try {
      runPath = createRequire(path.join(info.programDirectory, "noop.js")).resolve(runPath);
    } catch {
      return response(`It looks like the Pulumi SDK has not been installed. Have you run pulumi install (or npm install in ${info.programDirectory})?`);
    }

    /** @type {string[]} */
    const args = [...opts.nodeargs, runPath];
    /** @param {string} flag @param {string} value */
    const flag = (flag, value) => {
      if (value) args.push(`--${flag}`, value);
    };
    flag("monitor", req.getMonitorAddress());
    flag("engine", engineAddress);
    flag("organization", req.getOrganization());
    flag("project", req.getProject());
    flag("root-directory", info.rootDirectory);
    flag("stack", req.getStack());
    flag("pwd", info.programDirectory);
    if (req.getDryrun()) args.push("--dry-run");
    flag("parallel", String(req.getParallel()));
    flag("tracing", settings.tracing);
    args.push(info.entryPoint, ...req.getArgsList());

    return new Promise((resolve) => {
      const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
      running.add(child);
      // A cancelled call (the engine gave up on this Run) stops the program, too.
      call.on("cancelled", () => interrupt(child));

      // Forward the program's output unchanged: the engine shows our stdout/stderr to
      // the user. Watch stderr for V8's out-of-memory report to give a better hint.
      let outOfMemory = false;
      child.stdout?.on("data", (chunk) => process.stdout.write(chunk));
      child.stderr?.on("data", (chunk) => {
        process.stderr.write(chunk);
        const text = String(chunk);
        if (text.includes("<--- Last few GCs --->") || text.includes("Check failed: needs_context && current_scope_ == closure_scope_")) {
          outOfMemory = true;
        }
      });

      child.on("error", (err) => {
        running.delete(child);
        resolve(response(`Problem executing program (could not run language executor): ${err.message}`));
      });
      // "close" (not "exit") fires once the output streams are drained, so nothing is
      // lost. A process the program left behind may hold them open, though: then, like
      // the Go host, stop waiting for the output a few seconds after the exit.
      child.on("exit", (code, signal) => {
        setTimeout(() => child.emit("close", code, signal), KILL_GRACE_MS).unref();
      });
      let settled = false;
      child.on("close", (code, signal) => {
        if (settled) return;
        settled = true;
        running.delete(child);
        if (code === 0) resolve(response(""));
        else if (code === EXIT_AFTER_USER_ACTIONABLE_MESSAGE) resolve(response("", true));
        else if (code === null) resolve(response(`Program exited unexpectedly: signal: ${signal}`));
        else {
          let message = `Program exited with non-zero exit code: ${code}`;
          if (outOfMemory) {
            message +=
              ". Detected a possible out of memory error. Consider increasing the memory available to the nodejs process " +
              "by setting the `nodeargs` runtime option in Pulumi.yaml to `nodeargs: --max-old-space-size=<size>`.";
          }
          resolve(response(message));
        }
      });
    });
  };

  /**
   * InstallDependencies (`pulumi install`, `pulumi new`): runs the package manager's
   * install, but only when the program's @pulumi/pulumi cannot be resolved yet, i.e. the
   * dependencies are evidently not installed. The Go host always reinstalls.
   * @param {any} call a server-streaming call of InstallDependenciesResponse
   */
  const installDependencies = (call) => {
    const info = programInfo(call.request.getInfo(), { pwd: call.request.getDirectory() });
    /** @param {"stdout" | "stderr"} stream @param {string | Buffer} data */
    const send = (stream, data) => {
      const res = new language.InstallDependenciesResponse();
      if (stream === "stdout") res.setStdout(Buffer.from(data));
      else res.setStderr(Buffer.from(data));
      call.write(res);
    };
    /** @param {string} message */
    const fail = (message) => call.emit("error", { code: grpc.status.UNKNOWN, details: message });

    let opts;
    try {
      opts = parseOptions(info.options);
    } catch (err) {
      return fail(`failed to parse options: ${/** @type {Error} */ (err).message}`);
    }
    const dir = info.programDirectory;
    if (!fs.existsSync(path.join(dir, "package.json"))) {
      send("stdout", `No package.json in ${dir}: nothing to install.\n`);
      return call.end();
    }
    if (findSdkDir(dir)) {
      send("stdout", "Dependencies are already installed (@pulumi/pulumi resolves); skipping the package manager.\n");
      return call.end();
    }
    const pm = choosePackageManager(opts.packagemanager, dir);
    send("stdout", `Installing dependencies with ${pm}...\n\n`);
    const child = spawn(pm, ["install"], { cwd: dir, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (chunk) => send("stdout", chunk));
    child.stderr?.on("data", (chunk) => send("stderr", chunk));
    child.on("error", (err) => fail(`${pm} install failed to start: ${err.message}`));
    child.on("close", (code) => {
      if (code === 0) {
        send("stdout", "Finished installing dependencies\n\n");
        call.end();
      } else {
        fail(`${pm} install exited with code ${code}`);
      }
    });
  };

  /** The LanguageRuntime implementation, keyed like LanguageRuntimeService. */
  const service = {
    handshake: unary((call) => {
      // Sent when the engine attaches to an already running host (PULUMI_DEBUG_LANGUAGES);
      // a host started by the engine got the address on its command line.
      engineAddress = call.request.getEngineAddress() || engineAddress;
      if (engineAddress) startHealthCheck(grpc, engineAddress, () => shutdown());
      return new language.LanguageHandshakeResponse();
    }),

    getPluginInfo: unary(() => {
      const res = new plugin.PluginInfo();
      res.setVersion(sdk.version);
      return res;
    }),

    getRequiredPackages: unary((call) => {
      const info = programInfo(call.request.getInfo());
      const res = new language.GetRequiredPackagesResponse();
      res.setPackagesList(
        findPluginPackages(info.programDirectory).map((p) => {
          const dep = new plugin.PackageDependency();
          dep.setName(p.name);
          dep.setKind("resource");
          dep.setVersion(p.version);
          dep.setServer(p.server);
          /** @param {{ name: string, version: string, value: string }} v */
          const param = (v) => {
            const msg = new plugin.PackageParameterization();
            msg.setName(v.name);
            msg.setVersion(v.version);
            msg.setValue(Buffer.from(v.value, "base64")); // []byte in JSON is base64
            return msg;
          };
          if (p.parameterization) dep.setParameterization(param(p.parameterization));
          if (p.extension) dep.setExtension$(param(p.extension));
          return dep;
        }),
      );
      return res;
    }),

    // Superseded by GetRequiredPackages; kept for engines that still ask for it.
    getRequiredPlugins: unary((call) => {
      const req = call.request;
      const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
      const res = new language.GetRequiredPluginsResponse();
      res.setPluginsList(
        findPluginPackages(info.programDirectory).map((p) => {
          const dep = new plugin.PluginDependency();
          dep.setName(p.name);
          dep.setKind("resource");
          dep.setVersion(p.version);
          dep.setServer(p.server);
          return dep;
        }),
      );
      return res;
    }),

    run: unary(run),

    installDependencies,

    runtimeOptionsPrompts: unary(() => new language.RuntimeOptionsResponse()),

    about: unary(() => {
      const res = new language.AboutResponse();
      res.setExecutable(process.execPath);
      res.setVersion(process.version);
      res.getMetadataMap().set("packagemanager", "npm");
      return res;
    }),

    getProgramDependencies: unary((call) => {
      const req = call.request;
      const info = programInfo(req.getInfo(), { pwd: req.getPwd(), program: req.getProgram() });
      const res = new language.GetProgramDependenciesResponse();
      res.setDependenciesList(
        programDependencies(info.programDirectory).map((d) => {
          const dep = new language.DependencyInfo();
          dep.setName(d.name);
          dep.setVersion(d.version);
          return dep;
        }),
      );
      return res;
    }),

    cancel: unary(() => {
      for (const child of running) interrupt(child);
      return new sdk.empty.Empty();
    }),

    // Code generation, packaging and plugins written in Node.js are out of scope.
    template: unimplemented("Template"),
    runPlugin: unimplemented("RunPlugin"),
    generateProgram: unimplemented("GenerateProgram"),
    generateProject: unimplemented("GenerateProject"),
    generatePackage: unimplemented("GeneratePackage"),
    pack: unimplemented("Pack"),
    link: unimplemented("Link"),
  };

  return {
    service,
    /** Interrupts running programs (on shutdown); returns how many were running. */
    interruptAll: () => {
      for (const child of running) interrupt(child);
      return running.size;
    },
    running,
  };
}

/**
 * @param {string} preference auto | npm | yarn | pnpm | bun
 * @param {string} dir
 */
function choosePackageManager(preference, dir) {
  if (preference !== "auto") return preference;
  if (fs.existsSync(path.join(dir, "yarn.lock"))) return "yarn";
  if (fs.existsSync(path.join(dir, "pnpm-lock.yaml"))) return "pnpm";
  if (fs.existsSync(path.join(dir, "bun.lock")) || fs.existsSync(path.join(dir, "bun.lockb"))) return "bun";
  return "npm";
}

let healthCheckStarted = false;

/**
 * Like the Go host: every few minutes ask the engine's gRPC health service whether it is
 * alive, and shut down when it is gone, so an orphaned host does not linger. An engine
 * that does not implement the health service counts as alive.
 * @param {any} grpc
 * @param {string} address
 * @param {() => void} onDead
 */
function startHealthCheck(grpc, address, onDead) {
  if (healthCheckStarted) return;
  healthCheckStarted = true;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const timer = setInterval(() => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      () => Buffer.alloc(0), // an empty HealthCheckRequest
      (/** @type {Buffer} */ b) => b,
      {},
      { deadline: Date.now() + 30_000 },
      (/** @type {any} */ err) => {
        if (err && err.code !== grpc.status.UNIMPLEMENTED) {
          clearInterval(timer);
          onDead();
        }
      },
    );
  }, HEALTH_CHECK_INTERVAL_MS);
  timer.unref(); // the gRPC server keeps the process alive, not this timer
}

/** Set once the server runs; stops it and exits after programs have stopped. */
/** @type {() => void} */
let shutdown = () => process.exit(0);

function main() {
  const { flags, engineAddress } = parseArgs(process.argv.slice(2));
  const tracing = typeof flags.tracing === "string" ? flags.tracing : "";

  let sdk;
  try {
    sdk = loadSdk(process.cwd());
  } catch (err) {
    process.stderr.write(`${/** @type {Error} */ (err).message}\n`);
    process.exit(1);
  }
  if (flags.version) {
    process.stdout.write(`${sdk.version}\n`);
    return;
  }

  const { grpc } = sdk;
  const host = createLanguageHost(sdk, { engineAddress, tracing });
  const server = new grpc.Server({
    // The engine sends large messages (e.g. config); match its unlimited sizes.
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
  });
  server.addService(sdk.languageGrpc.LanguageRuntimeService, host.service);

  shutdown = () => {
    const waiting = host.interruptAll();
    server.forceShutdown();
    if (waiting === 0) process.exit(0);
    // Give interrupted programs time to stop; they are killed after KILL_GRACE_MS anyway.
    const check = setInterval(() => {
      if (host.running.size === 0) process.exit(0);
    }, 50);
    setTimeout(() => process.exit(0), KILL_GRACE_MS + 1_000).unref();
    check.unref();
  };
  // The engine stops plugins with SIGINT (then SIGKILL after 5 s).
  process.on("SIGINT", () => shutdown());
  process.on("SIGTERM", () => shutdown());

  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (/** @type {Error | null} */ err, /** @type {number} */ port) => {
    if (err) {
      process.stderr.write(`pulumi-language-nodejs: could not start the gRPC server: ${err.message}\n`);
      process.exit(1);
    }
    // The engine reads exactly this line to learn where to connect.
    process.stdout.write(`${port}\n`);
    if (engineAddress) startHealthCheck(grpc, engineAddress, () => shutdown());
  });
}

if (require.main === module) {
  main();
}

module.exports = { parseArgs, parseOptions, splitShellWords, configJson, findPluginPackages, programDependencies };
