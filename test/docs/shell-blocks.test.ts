// The docs run as written (issues #33 item 7, #41 item 1): every `sh` block of
// README.md, docs/cli.md, docs/gitops.md, docs/observability.md and
// docs/fleet-replicas.md, in that order, in one bash (-euo pipefail), from a
// blank directory outside the repository, against the emulator the README
// starts, with no terminal and nothing a reader would not have: no answer to a
// question, no flag or variable the docs do not give. A block written as a file
// (```ts index.ts) is written to that file where it appears; a block indented
// in a list item counts as well. A block that cannot run here says so on the
// line before it, with the reason (CONTRIBUTING.md, "Docs that run"):
//   <!-- docs-test: skip: needs the real service and its API key -->
// Only what the README assumes is given: Pulumi and Node.js >= 22 on PATH, a
// PULUMI_CONFIG_PASSPHRASE, and, standing in for `npm install` (the npm
// registry is not used here), this repository's package in node_modules. At
// the end the emulator is stopped the way the README says, and the script
// waits for it: an emulator that outlived that would hold the run until its
// time ran out.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { type Block, fencedBlocks } from "../support/doc-blocks";
import { REPO_ROOT } from "../support/pulumi-env";

/**
 * bash in a process group of its own: when it exits, the group is ended, so
 * the emulator the README starts in the background (npx, sh, node) stops too
 * and no pipe stays open. Ended as well after `timeoutMs`.
 */
function runScript(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const endGroup = () => {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        // the group is gone already
      }
    };
    const timer = setTimeout(endGroup, timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      endGroup();
      // What the pipes still hold arrives within moments of the group's end.
      setTimeout(() => resolve({ code, stdout, stderr }), 200);
    });
  });
}
const DOCS = ["README.md", "docs/cli.md", "docs/gitops.md", "docs/observability.md", "docs/fleet-replicas.md"];
/** The docs whose shell blocks make the flow (the others add to it). */
const FLOW_DOCS = ["README.md", "docs/cli.md", "docs/gitops.md"];

/** How the README says to stop the emulator, as written there (a code span). */
const STOP_EMULATOR = (() => {
  const stop = /`(kill "\$\(cat fake-server\.pid\)")` stops the emulator/.exec(readFileSync(path.join(REPO_ROOT, "README.md"), "utf8"))?.[1];
  if (stop === undefined) throw new Error("README.md no longer says how to stop the emulator");
  return stop;
})();

/** The blocks as one bash script: files written, sh blocks run, each announced by its place; then the emulator stopped, as the README says. */
function scriptOf(blocks: readonly Block[]): string {
  const parts = ["set -euo pipefail"];
  for (const block of blocks) {
    const file = /^\w+ (\S+)$/.exec(block.info)?.[1];
    if (block.info === "sh" && block.skip === undefined && block.runBy === undefined) {
      parts.push(`printf '\\n### %s\\n' ${JSON.stringify(`${block.doc}:${block.line}`)}`, block.text);
    } else if (file !== undefined) {
      if (file.includes("/") || file.startsWith(".")) throw new Error(`${block.doc}:${block.line}: a file block writes into the directory only, not ${file}`);
      parts.push(`cat > ${JSON.stringify(file)} <<'__DOCS_FILE__'\n${block.text}\n__DOCS_FILE__`);
    }
  }
  // Stopped as written, then waited for: bash's `wait` returns once every job it started (npx, and so the emulator) has ended.
  parts.push(`printf '\\n### stop the emulator\\n'`, STOP_EMULATOR, "wait", `printf '\\n### the emulator stopped\\n'`);
  return `${parts.join("\n")}\n`;
}

/** What `npm install pulumi-user-groups @pulumi/pulumi` (and the program's dev dependencies) would put in node_modules. */
function installPackage(dir: string): void {
  const modules = path.join(dir, "node_modules");
  mkdirSync(path.join(modules, "@pulumi"), { recursive: true });
  mkdirSync(path.join(modules, "@types"), { recursive: true });
  mkdirSync(path.join(modules, ".bin"), { recursive: true });
  symlinkSync(REPO_ROOT, path.join(modules, "pulumi-user-groups"));
  for (const name of ["@pulumi/pulumi", "typescript", "@types/node"]) symlinkSync(path.join(REPO_ROOT, "node_modules", name), path.join(modules, name));
  const bins = { "user-groups": "dist/provider/cli/user-groups.js", "user-groups-fake-server": "dist/fake-server/cli.js" };
  for (const [bin, target] of Object.entries(bins)) {
    const file = path.join(modules, ".bin", bin);
    writeFileSync(file, `#!/bin/sh\nexec node "$(dirname "$0")/../pulumi-user-groups/${target}" "$@"\n`);
    chmodSync(file, 0o755);
  }
}

const all = DOCS.flatMap((doc) => fencedBlocks(doc, readFileSync(path.join(REPO_ROOT, doc), "utf8")));
const dir = mkdtempSync(path.join(os.tmpdir(), "user-groups-docs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the docs' shell blocks", () => {
  it("each doc has blocks that run, and every block left out says why", () => {
    for (const doc of [...FLOW_DOCS, "docs/observability.md"]) expect(all.filter((b) => b.doc === doc && b.info === "sh" && b.skip === undefined && b.runBy === undefined).length, doc).toBeGreaterThan(0);
    // Nothing that needs a terminal: every `pulumi up`, `destroy` or `refresh` of a block runs without asking.
    for (const block of all.filter((b) => b.info === "sh" && b.skip === undefined)) {
      for (const line of block.text.split("\n").filter((l) => /\bpulumi (up|destroy|refresh)\b/.test(l))) expect(line, `${block.doc}:${block.line}`).toMatch(/ --yes\b/);
      expect(block.text, `${block.doc}:${block.line}`).not.toMatch(/\bkill %/);
    }
    const skipped = all.filter((b) => b.skip !== undefined);
    for (const block of skipped) expect(block.info, `${block.doc}:${block.line}`).toBe("sh");
    // What cannot run here, and nothing else: the registry, the real service, the whole suite in a clone.
    expect(skipped.map((b) => b.skip).sort()).toEqual([
      "needs the npm registry; the test installs this repository's package in its place",
      "needs the npm registry; the test installs this repository's package in its place",
      "needs the real service and its API key",
      "needs the real service and its API key",
      "runs in a clone of this repository: npm start and npm test are the suite itself",
    ]);
    // Install from a checkout: run as written by the test named, which finds them by that marker.
    const elsewhere = all.filter((b) => b.runBy !== undefined);
    expect(elsewhere.map((b) => `${b.doc} -> ${b.runBy!.file}`)).toEqual(["README.md -> test/package/pack.test.ts", "README.md -> test/package/pack.test.ts"]);
    for (const block of elsewhere) {
      expect(block.info, `${block.doc}:${block.line}`).toBe("sh");
      expect(existsSync(path.join(REPO_ROOT, block.runBy!.file))).toBe(true);
      expect(readFileSync(path.join(REPO_ROOT, block.runBy!.file), "utf8")).toContain(`blocksRunBy("${block.doc}", "${block.runBy!.file}")`);
    }
    // A skip marker must sit right before a block: none is left dangling.
    for (const doc of DOCS) {
      const markers = readFileSync(path.join(REPO_ROOT, doc), "utf8").match(/<!-- docs-test: .+ -->/g) ?? [];
      expect(markers.length, doc).toBe(all.filter((b) => b.doc === doc && (b.skip !== undefined || b.runBy !== undefined)).length);
    }
  });

  it("run in order from a blank directory against the emulator, as written", { timeout: 600_000 }, async () => {
    installPackage(dir);
    const env: NodeJS.ProcessEnv = {
      HOME: dir,
      // Pulumi finds its home through the passwd entry, not HOME: ~/.pulumi for a user, here the blank directory's.
      PULUMI_HOME: path.join(dir, ".pulumi"),
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      PULUMI_CONFIG_PASSPHRASE: "docs-test-passphrase",
      PATH: [inject("pulumiBinDir"), path.dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(path.delimiter),
    };
    const { code, stdout, stderr } = await runScript(scriptOf(all), dir, env, 540_000);
    if (code !== 0) {
      const steps = stdout.split("\n").filter((l) => l.startsWith("### "));
      throw new Error(`the docs failed at ${steps.at(-1) ?? "the start"} (exit ${code}):\n${stdout.slice(-6000)}\n${stderr.slice(-6000)}`);
    }
    // The README's program against the emulator: created, its token printed when asked.
    expect(stdout).toMatch(/\+ 2 created/);
    expect(stdout).toMatch(/^[A-Za-z0-9_-]{32,}$/m);
    // The GitOps commands on one stack, prod, throughout: previewed, applied, in sync, destroyed, applied again.
    expect(stdout).toContain("### user-groups: Preview of stack `prod`");
    expect(stdout).toMatch(/drift of stack "prod": in sync \(2 groups read/);
    expect(stdout).toMatch(/destroy of stack "prod": 0 created, 0 updated, 0 replaced, 2 deleted/);
    expect(stdout).toMatch(/up of stack "prod": 2 created, 0 updated, 0 replaced, 0 deleted, 0 unchanged/);
    // The emulator stopped the way the README says, in a script: the wait for it returned.
    expect(stdout).toContain("### the emulator stopped");
    // One story for where state lives: the command said its stacks are not in the backend `pulumi login` chose, and where they are.
    expect(stderr).toContain(
      `user-groups: the stacks of this run are kept in file://${dir}/.user-groups/state, not in the backend \`pulumi login\` chose (file://${dir}/.pulumi-state)`,
    );
    // The state went where the README logged in: under the home directory.
    expect(readFileSync(path.join(dir, ".pulumi", "credentials.json"), "utf8")).toContain(`file://${dir}/.pulumi-state`);
    expect(readdirSync(path.join(dir, ".pulumi-state", ".pulumi", "stacks"), { recursive: true }).join(" ")).toMatch(/dev\.json/);
  });
});
