// docs/plugin.md's walkthrough, run as written: every `sh` block between its
// walkthrough markers, in order, in one bash, from a blank directory outside
// the repository, with only what the docs assume on PATH (pulumi, Pulumi YAML's
// host, Node.js >= 22) and TARBALL pointing at the plugin tarball. Pulumi's home
// is not `$HOME/.pulumi` (#41 item 5): nothing in the walkthrough may depend on
// where Pulumi keeps its plugins.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, inject, it } from "vitest";
import { REPO_ROOT } from "../support/pulumi-env";
import { pluginTarball, toolDir } from "./support";

const run = promisify(execFile);

/** The `sh` blocks of the walkthrough section, in order. */
function walkthroughScript(markdown: string): string {
  const start = markdown.indexOf("<!-- walkthrough -->");
  const end = markdown.indexOf("<!-- /walkthrough -->");
  if (start < 0 || end < start) throw new Error("docs/plugin.md has no walkthrough markers");
  const blocks = [...markdown.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  if (blocks.length === 0) throw new Error("the walkthrough has no sh blocks");
  return blocks.join("\n");
}

const dir = mkdtempSync(path.join(os.tmpdir(), "user-groups-walkthrough-"));
mkdirSync(path.join(dir, "home"));
afterAll(() => {
  // The walkthrough stops its emulator; should it fail before that, stop it here.
  const pidFile = path.join(dir, "emulator.pid");
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, "utf8").trim()));
    } catch {
      // already stopped
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("docs/plugin.md walkthrough", { timeout: 240_000 }, () => {
  it("runs as written from a blank directory: a YAML program, then pulumi import, no changes after either", async () => {
    const script = walkthroughScript(readFileSync(path.join(REPO_ROOT, "docs/plugin.md"), "utf8"));
    const env: NodeJS.ProcessEnv = {
      HOME: path.join(dir, "home"),
      // Elsewhere than $HOME/.pulumi, as with a PULUMI_HOME of a user's own, or a HOME unlike the passwd entry's.
      PULUMI_HOME: path.join(dir, "pulumi-home"),
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      TARBALL: pluginTarball(),
      PATH: [inject("pulumiBinDir"), toolDir("pulumiYamlBinDir"), path.dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(path.delimiter),
    };
    const { stdout } = await run("bash", ["-euo", "pipefail", "-c", script], { cwd: dir, env, maxBuffer: 32 * 1024 * 1024 }).catch(
      (error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`the walkthrough failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
      },
    );
    expect(stdout).toMatch(/\+ 2 created/); // the stack and acme
    expect(stdout).toContain("[secret]");
    expect(stdout).toMatch(/= 1 imported/);
    expect(stdout).toMatch(/type: user-groups:(index:)?UserGroup[\s\S]*name: Initech[\s\S]*seats: 5/);
    expect(stdout).toMatch(/- 3 deleted/); // acme, initech and the stack
    // Stopped as the walkthrough says: its pid file goes when it stops.
    expect(existsSync(path.join(dir, "emulator.pid"))).toBe(false);
    expect(script).not.toMatch(/\$HOME\/\.pulumi|PULUMI_HOME/);
  });
});
