// On-disk Pulumi programs (Pulumi.yaml with `runtime: nodejs`) run through the
// Node.js language host: a real Pulumi install's own, or our minimal one
// (language-host/) that scripts/ensure-pulumi installs next to a self-built
// engine. These tests drive the engine through the Automation API's on-disk form
// (a workDir, no inline program): config, up, preview, refresh, a failing
// program, destroy.
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import type * as grpcTypes from "@grpc/grpc-js";
import type * as languageGrpcTypes from "@pulumi/pulumi/proto/language_grpc_pb";
import type * as languagePbTypes from "@pulumi/pulumi/proto/language_pb";
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pulumiCommandOnPath } from "../../provider/automation/engine/pulumi-cli";
import { createPulumiTestEnv, REPO_ROOT, type PulumiTestEnv } from "../support/pulumi-env";

const MARKER = "pulumi-user-groups-language-host";

/** The pulumi-language-nodejs the engine will find: first on the tests' PATH. */
function findLanguageHost(env: PulumiTestEnv): string | undefined {
  for (const dir of (env.envVars.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, "pulumi-language-nodejs");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function writeProgram(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
}

// A dynamic resource whose provider returns a deterministic id and a computed
// output; the stack reads a plain and a secret config value and exports both.
const TS_PROGRAM = `import * as pulumi from "@pulumi/pulumi";

const config = new pulumi.Config();

const provider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: { greeting: string }) {
    return { id: \`greet-\${inputs.greeting}\`, outs: { greeting: inputs.greeting, length: inputs.greeting.length } };
  },
};

class Greeting extends pulumi.dynamic.Resource {
  declare readonly greeting: pulumi.Output<string>;
  declare readonly length: pulumi.Output<number>;
  constructor(name: string, greeting: string) {
    super(provider, name, { greeting, length: undefined });
  }
}

const greeting = new Greeting("greeting", config.require("greeting"));
console.log("program output reaches the engine");

export const id = greeting.id;
export const length = greeting.length;
export const token = config.requireSecret("token");
`;

const JS_PROGRAM = `"use strict";
const pulumi = require("@pulumi/pulumi");

const provider = {
  async create(inputs) {
    return { id: "js-" + inputs.word, outs: { word: inputs.word } };
  },
};

class Word extends pulumi.dynamic.Resource {
  constructor(name, word) {
    super(provider, name, { word });
  }
}

const word = new Word("word", new pulumi.Config().get("word") || "plain");
exports.word = word.word;
exports.argv = process.argv.slice(2).join(" ");
`;

describe("the Node.js language host", () => {
  const env = createPulumiTestEnv("langhost");
  afterAll(() => env.cleanup());

  it("is installed where the engine finds it", () => {
    const host = findLanguageHost(env);
    expect(host, "no pulumi-language-nodejs on the tests' PATH: run scripts/ensure-pulumi").toBeDefined();
    const ours = readFileSync(host!, "utf8").includes(MARKER);
    console.log(`language host: ${host} (${ours ? "pulumi-user-groups minimal host" : "Pulumi's own"})`);
  });

  describe("speaks the LanguageRuntime protocol", () => {
    // grpc-js and the stubs from @pulumi/pulumi itself, like the host does.
    const requireFromRepo = createRequire(path.join(REPO_ROOT, "noop.js"));
    const requireFromSdk = createRequire(requireFromRepo.resolve("@pulumi/pulumi/package.json"));
    const grpc = requireFromSdk("@grpc/grpc-js") as typeof grpcTypes;
    const { LanguageRuntimeClient } = requireFromSdk("./proto/language_grpc_pb.js") as typeof languageGrpcTypes;
    const pb = requireFromSdk("./proto/language_pb.js") as typeof languagePbTypes;
    let child: ChildProcess;
    let client: languageGrpcTypes.LanguageRuntimeClient;
    const programDir = path.join(env.workDir, "..", "protocol");

    beforeAll(async () => {
      // A program whose node_modules holds one provider-plugin package.
      writeProgram(programDir, {
        "package.json": JSON.stringify({ name: "protocol", dependencies: { "@acme/widgets": "1.2.3" } }),
        "node_modules/@acme/widgets/package.json": JSON.stringify({
          name: "@acme/widgets",
          version: "1.2.3",
          pulumi: { resource: true, name: "widgets", server: "https://example.invalid/plugins" },
        }),
        "node_modules/left-pad/package.json": JSON.stringify({ name: "left-pad", version: "1.0.0" }),
      });
      const host = findLanguageHost(env);
      if (!host) throw new Error("no pulumi-language-nodejs on the tests' PATH");
      // Started as the engine would: the engine address last, cwd where @pulumi/pulumi resolves.
      child = spawn(host, ["127.0.0.1:1"], { cwd: REPO_ROOT, env: { ...process.env, ...env.envVars }, stdio: ["ignore", "pipe", "inherit"] });
      const port = await new Promise<number>((resolve, reject) => {
        let out = "";
        child.stdout!.on("data", (chunk: Buffer) => {
          out += String(chunk);
          if (out.includes("\n")) resolve(Number.parseInt(out, 10));
        });
        child.on("exit", (code) => reject(new Error(`language host exited with ${code} before printing a port`)));
      });
      expect(port).toBeGreaterThan(0);
      client = new LanguageRuntimeClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    });

    afterAll(async () => {
      client?.close();
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child.on("exit", resolve));
        child.kill("SIGINT"); // how the engine stops plugins
        await exited;
      }
    });

    const info = () => {
      const i = new pb.ProgramInfo();
      i.setRootDirectory(programDir);
      i.setProgramDirectory(programDir);
      i.setEntryPoint(".");
      return i;
    };

    it("reports provider plugins found in node_modules", async () => {
      const req = new pb.GetRequiredPackagesRequest();
      req.setInfo(info());
      const res = await new Promise<languagePbTypes.GetRequiredPackagesResponse>((resolve, reject) =>
        client.getRequiredPackages(req, (err, r) => (err ? reject(err) : resolve(r))),
      );
      expect(res.getPackagesList().map((p) => p.toObject())).toEqual([
        expect.objectContaining({ name: "widgets", kind: "resource", version: "v1.2.3", server: "https://example.invalid/plugins" }),
      ]);
    });

    it("lists the program's dependencies", async () => {
      const req = new pb.GetProgramDependenciesRequest();
      req.setInfo(info());
      const res = await new Promise<languagePbTypes.GetProgramDependenciesResponse>((resolve, reject) =>
        client.getProgramDependencies(req, (err, r) => (err ? reject(err) : resolve(r))),
      );
      expect(res.getDependenciesList().map((d) => d.toObject())).toContainEqual({ name: "@acme/widgets", version: "1.2.3" });
    });

    it("reports the node it runs programs with", async () => {
      const req = new pb.AboutRequest();
      req.setInfo(info());
      const res = await new Promise<languagePbTypes.AboutResponse>((resolve, reject) =>
        client.about(req, (err, r) => (err ? reject(err) : resolve(r))),
      );
      expect(res.getExecutable()).toMatch(/node/);
      expect(res.getVersion()).toMatch(/^v\d+\./);
    });
  });

  describe("runs an on-disk TypeScript program", () => {
    let stack: Stack;
    const dir = env.workDir;
    /**
     * The stack as the backend stores it: its checkpoint file, read here (a `stack export` or `stack output` reads the
     * same file through two engine processes).
     */
    const stored = () =>
      JSON.parse(readFileSync(path.join(env.backendDir, ".pulumi/stacks/langhost-ts/dev.json"), "utf8")) as {
        checkpoint: { latest?: { resources?: { type: string; outputs?: Record<string, unknown> }[] } };
      };
    /** The stack's plain outputs as stored (what `stack output` shows). */
    const storedOutputs = () => stored().checkpoint.latest?.resources?.find((r) => r.type === "pulumi:pulumi:Stack")?.outputs ?? {};

    beforeAll(async () => {
      writeProgram(dir, {
        "Pulumi.yaml": "name: langhost-ts\nruntime: nodejs\ndescription: on-disk TypeScript program\n",
        // Its own package.json: otherwise the SDK would take the repository's as the
        // program's package (and its "main" as the entry point).
        "package.json": JSON.stringify({ name: "langhost-ts", private: true }),
        "index.ts": TS_PROGRAM,
      });
      // The backend is the env's own and empty: the stack is created at once (a select first would only fail). The
      // engine's version as the product knows it (cached per binary), not a `pulumi version` per workspace.
      stack = await LocalWorkspace.createStack({ stackName: "dev", workDir: dir }, { envVars: env.envVars, pulumiCommand: await pulumiCommandOnPath(env.envVars) });
      await stack.setAllConfig({ greeting: { value: "hello" }, token: { value: "s3cr3t-token", secret: true } });
    });

    it("up creates the resource and exports outputs, the secret one as a secret", async () => {
      const up = await stack.up();
      expect(up.summary.result).toBe("succeeded");
      expect(up.summary.resourceChanges).toMatchObject({ create: 2 });
      expect(up.stdout).toContain("program output reaches the engine");
      expect(up.outputs.id).toEqual({ value: "greet-hello", secret: false });
      expect(up.outputs.length).toEqual({ value: 5, secret: false });
      expect(up.outputs.token).toEqual({ value: "s3cr3t-token", secret: true });
      // ...and the stored state holds it encrypted, not in plain text.
      const stored = readFileSync(path.join(env.backendDir, ".pulumi/stacks/langhost-ts/dev.json"), "utf8");
      expect(stored).toContain("ciphertext");
      expect(stored).not.toContain("s3cr3t-token");
    });

    it("a preview afterwards expects no changes", async () => {
      const preview = await stack.preview({ expectNoChanges: true });
      expect(preview.changeSummary).toEqual({ same: 2 });
    });

    it("refresh succeeds and keeps the outputs", async () => {
      const refresh = await stack.refresh();
      expect(refresh.summary.result).toBe("succeeded");
      expect(storedOutputs().id).toBe("greet-hello");
    });

    it("a program that throws fails the update with its message", async () => {
      const good = readFileSync(path.join(dir, "index.ts"), "utf8");
      writeFileSync(path.join(dir, "index.ts"), `${good}\nthrow new Error("the program broke on purpose 7d1f");\n`);
      try {
        await expect(stack.up()).rejects.toThrow(/the program broke on purpose 7d1f/);
      } finally {
        writeFileSync(path.join(dir, "index.ts"), good);
      }
      // Nothing was deleted because the program failed part way.
      expect(storedOutputs().id).toBe("greet-hello");
    });

    it("a program that exits non-zero fails the update with the exit code", async () => {
      const good = readFileSync(path.join(dir, "index.ts"), "utf8");
      writeFileSync(path.join(dir, "index.ts"), `process.exit(3);\n${good}`);
      try {
        await expect(stack.preview()).rejects.toThrow(/Program exited with non-zero exit code: 3/);
      } finally {
        writeFileSync(path.join(dir, "index.ts"), good);
      }
    });

    it("destroy removes everything", async () => {
      const destroy = await stack.destroy();
      expect(destroy.summary.resourceChanges).toMatchObject({ delete: 2 });
      const { latest } = stored().checkpoint;
      expect(latest).toBeDefined();
      expect(latest?.resources ?? []).toHaveLength(0);
    });
  });

  it("runs a plain JavaScript program from the file named by `main`", async () => {
    const dir = path.join(env.workDir, "..", "js-program");
    writeProgram(dir, {
      "Pulumi.yaml": "name: langhost-js\nmain: src/program.js\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n",
      "package.json": JSON.stringify({ name: "langhost-js", private: true }),
      "src/program.js": JS_PROGRAM,
    });
    const stack = await LocalWorkspace.createStack({ stackName: "js", workDir: dir }, { envVars: env.envVars, pulumiCommand: await pulumiCommandOnPath(env.envVars) });
    await stack.setConfig("word", { value: "plain-js" });
    const up = await stack.up();
    expect(up.outputs.word?.value).toBe("plain-js");
    expect(up.outputs.argv?.value).toBe("");
    const destroy = await stack.destroy();
    expect(destroy.summary.resourceChanges).toMatchObject({ delete: 2 });
  });
});
