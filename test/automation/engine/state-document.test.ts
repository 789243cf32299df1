// engine/state-document.ts against the real engine (issue #39 item 2): a state
// read without `--show-secrets` holds ciphertext only, the readers that need a
// token get it decrypted in memory (the passphrase from the environment or its
// file, as Pulumi reads it; a wrong one refused as the engine refuses it), and a
// state is written through a 0600 file in the run's 0700 directory that is gone
// after the import, after a refusal before the write, and after a SIGTERM.
import { spawn } from "node:child_process";
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { beforeAll, describe, expect, it } from "vitest";
import { provisionUserGroups, WrongPassphraseError } from "../../../provider/automation";
import { selectStack, StackNotFoundError } from "../../../provider/automation/engine/open-stack";
import { exportState, importState, readStateWithSecrets } from "../../../provider/automation/engine/state";
import { pulumiCommandOnPath } from "../../../provider/automation/engine/pulumi-cli";
import { REPO_ROOT } from "../../support/pulumi-env";
import { useStackFixture } from "../../support/stack-fixture";

const PASSPHRASE = "state-document";
const { server, env, runOptions } = useStackFixture({ label: "state-document", passphrase: PASSPHRASE });

async function withStack<T>(options: Parameters<typeof selectStack>[0], use: (stack: Awaited<ReturnType<typeof selectStack>>["stack"]) => Promise<T>): Promise<T> {
  const selected = await selectStack(options, async () => ({}), { mustExist: true });
  try {
    return await use(selected.stack);
  } finally {
    selected.dispose();
  }
}

function importFilesIn(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith("state-import-"));
}

/** PulumiCommand's runner (not in its typings): every command of every workspace of this process goes through it. */
type Runner = { run: (args: string[], cwd: string, env: Record<string, string>, ...rest: unknown[]) => Promise<{ stdout: string }> };

/** The commands `work` starts through this process's Pulumi CLI (the one every workspace of these options shares), as "verb noun". */
async function commandsOf(options: { envVars: Record<string, string> }, work: () => Promise<unknown>): Promise<string[]> {
  const command = (await pulumiCommandOnPath(options.envVars)) as unknown as Runner;
  const run = command.run;
  const seen: string[] = [];
  command.run = function (args, ...rest) {
    seen.push(args.slice(0, 2).join(" "));
    return run.call(this, args, ...rest);
  };
  try {
    await work();
  } finally {
    command.run = run;
  }
  return seen;
}

// One stack that the tests which only read it (or stop before writing it) share: a setup, one engine run; the test
// that writes a state has a stack of its own.
const READ_ONLY = "read";
let firstRunCommands: string[] = [];
beforeAll(async () => {
  firstRunCommands = await commandsOf(runOptions(READ_ONLY), () => provisionUserGroups({ ...runOptions(READ_ONLY), groups: [{ name: "Read", userGroupId: "read" }] }));
}, 120_000);

describe("reading a state", () => {
  it("exportState holds the token as ciphertext only; readStateWithSecrets decrypts it in memory; a wrong passphrase is refused", async () => {
    const options = runOptions(READ_ONLY);
    const token = server.groups().find((g) => g.user_group_id === "read")!.token;
    await withStack(options, async (stack) => {
      const exported = JSON.stringify(await exportState(stack));
      expect(exported).not.toContain(token);
      expect(exported).toMatch(/"ciphertext":"v1:/);
      expect(exported).not.toContain('"plaintext"');
      const revealed = JSON.stringify(await readStateWithSecrets(stack));
      expect(revealed).toContain(JSON.stringify(JSON.stringify(token)).slice(1, -1));
    });
    // The passphrase from a file (trimmed, as Pulumi reads it), none in the environment.
    const file = path.join(env.workDir, "passphrase.txt");
    writeFileSync(file, `${PASSPHRASE}\n`, { mode: 0o600 });
    const { PULUMI_CONFIG_PASSPHRASE: _fromEnv, ...withoutPassphrase } = options.envVars;
    const { passphrase: _given, ...rest } = options;
    const fromFile = { ...rest, envVars: { ...withoutPassphrase, PULUMI_CONFIG_PASSPHRASE_FILE: file } };
    await withStack(fromFile, async (stack) => expect(JSON.stringify(await readStateWithSecrets(stack))).toContain(token));
    const wrong = { ...options, passphrase: "not the passphrase" };
    await withStack(wrong, async (stack) => {
      await expect(exportState(stack)).rejects.toBeInstanceOf(WrongPassphraseError);
      await expect(readStateWithSecrets(stack)).rejects.toBeInstanceOf(WrongPassphraseError);
    });
  });
});

describe("on a file backend", () => {
  it("a run of a new stack starts the CLI for its `stack init` and its `up` only (no `stack select`, no `stack export`)", () => {
    expect(firstRunCommands.map((c) => c.split(" ")[0] === "up" ? "up" : c)).toEqual(["stack init", "up"]);
  });

  it("a stack that must exist and is not there is stack_not_found with no CLI process", async () => {
    const options = runOptions("never-made");
    let error: unknown;
    expect(await commandsOf(options, () => selectStack(options, async () => ({}), { mustExist: true }).catch((e: unknown) => void (error = e)))).toEqual([]);
    expect(error).toBeInstanceOf(StackNotFoundError);
    expect(error).toMatchObject({ code: "stack_not_found" });
  });

  it("the state is read from the stack's file with no CLI process, and is exactly what `pulumi stack export` prints", async () => {
    const options = runOptions(READ_ONLY);
    await withStack(options, async (stack) => {
      let read: Awaited<ReturnType<typeof exportState>> | undefined;
      expect(await commandsOf(options, async () => (read = await exportState(stack)))).toEqual([]);
      const workspace = stack.workspace;
      const printed = await (workspace.pulumiCommand as unknown as Runner).run(["stack", "export", "--stack", stack.name], workspace.workDir, { ...workspace.envVars });
      expect(read).toEqual(JSON.parse(printed.stdout));
      // A state with a group in it, its token a secret.
      expect(JSON.stringify(read)).toMatch(/"ciphertext":"v1:/);
    });
  });
  // The stack's project is its workspace's: another program's stack on the same backend is read from its own file
  // too, not from this package's stack of the same name ("user-groups"/read, made above), and not through the CLI.
  it("a stack of another project is read from its own file with no CLI process, exactly what `pulumi stack export` prints", async () => {
    const options = runOptions(READ_ONLY);
    const envVars = { ...options.envVars, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE };
    const workDir = path.join(env.workDir, "another-project");
    mkdirSync(workDir, { recursive: true });
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: READ_ONLY, projectName: "another-project", program: async () => ({ answer: 42 }) },
      { workDir, envVars, pulumiCommand: await pulumiCommandOnPath(options.envVars) },
    );
    await stack.up();
    let read: Awaited<ReturnType<typeof exportState>> | undefined;
    expect(await commandsOf(options, async () => (read = await exportState(stack)))).toEqual([]);
    const printed = await (stack.workspace.pulumiCommand as unknown as Runner).run(["stack", "export", "--stack", stack.name], workDir, envVars);
    expect(read).toEqual(JSON.parse(printed.stdout));
    const text = JSON.stringify(read);
    expect(text).toContain("urn:pulumi:read::another-project::pulumi:pulumi:Stack::another-project-read");
    expect(text).not.toContain("UserGroup");
  }, 120_000);
});

describe("writing a state", () => {
  it("goes through a 0600 file in the 0700 run directory, gone after the import and after a refusal before the write", async () => {
    const options = runOptions("write");
    await provisionUserGroups({ ...options, groups: [{ name: "Write", userGroupId: "write" }] });
    const token = server.groups().find((g) => g.user_group_id === "write")!.token;
    await withStack(options, async (stack) => {
      const dir = stack.workspace.workDir;
      const state = await exportState(stack);
      // Refused before the write (a lost lease): nothing imported, the file gone.
      let seen: { mode: number; dirMode: number; text: string } | undefined;
      const refusal = new Error("lease lost");
      await expect(
        importState(stack, { ...state, deployment: { ...(state.deployment as object), resources: [] } }, {
          beforeWrite: async () => {
            const [name] = importFilesIn(dir);
            const file = path.join(dir, name!);
            seen = { mode: lstatSync(file).mode & 0o777, dirMode: lstatSync(dir).mode & 0o777, text: readFileSync(file, "utf8") };
            throw refusal;
          },
        }),
      ).rejects.toBe(refusal);
      expect(seen).toMatchObject({ mode: 0o600, dirMode: 0o700 });
      expect(seen!.text).not.toContain(token);
      expect(importFilesIn(dir)).toEqual([]);
      expect(JSON.stringify(await exportState(stack))).toContain("write");
      // A document with decrypted secrets is never written.
      await expect(importState(stack, await readStateWithSecrets(stack))).rejects.toMatchObject({ code: "invalid_option" });
      expect(importFilesIn(dir)).toEqual([]);
      // The import itself: the state as written, the file gone.
      const marked = structuredClone(state);
      const root = (marked.deployment as { resources: Array<{ type: string; outputs?: Record<string, unknown> }> }).resources.find((r) => r.type === "pulumi:pulumi:Stack")!;
      root.outputs = { ...root.outputs, imported: "yes" };
      await importState(stack, marked);
      expect(importFilesIn(dir)).toEqual([]);
      expect(JSON.stringify(await exportState(stack))).toContain('"imported":"yes"');
      expect(JSON.stringify(await readStateWithSecrets(stack))).toContain(token);
    });
  });

  it("a process stopped by SIGTERM during the import leaves no state document", async () => {
    // The shared stack: the process is stopped before its import writes anything.
    const options = runOptions(READ_ONLY);
    const dist = path.join(REPO_ROOT, "dist/provider/automation/engine");
    const script = `
      const { selectStack } = require(${JSON.stringify(path.join(dist, "open-stack.js"))});
      const { exportState, importState } = require(${JSON.stringify(path.join(dist, "state", "state-document.js"))});
      (async () => {
        const options = JSON.parse(process.env.STATE_DOCUMENT_OPTIONS);
        const selected = await selectStack(options, async () => ({}), { mustExist: true });
        const state = await exportState(selected.stack);
        // Held at the import as a long \`pulumi stack import\` would hold it (a live timer keeps the process up).
        await importState(selected.stack, state, { beforeWrite: () => { process.stdout.write(selected.stack.workspace.workDir + "\\n"); return new Promise(() => setInterval(() => {}, 1000)); } });
      })();`;
    const child = spawn(process.execPath, ["-e", script], {
      // A plain process (not one of the test runner's, whose environment may make it listen to signals itself).
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", STATE_DOCUMENT_OPTIONS: JSON.stringify(options) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const dir = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(out.trim());
      });
      child.on("close", () => reject(new Error(`the child ended first: ${stderr}`)));
    });
    expect(importFilesIn(dir)).toHaveLength(1);
    const ended = new Promise<string>((resolve) => child.on("close", (code, signal) => resolve(`${signal ?? `exit ${code}`} ${stderr}`.trim())));
    child.kill("SIGTERM");
    // Stopped by the signal as without the listener, and the document gone.
    expect(await ended).toBe("SIGTERM");
    expect(importFilesIn(dir)).toEqual([]);
  });
});
