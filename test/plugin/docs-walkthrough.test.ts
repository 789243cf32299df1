// docs/plugin.md's walkthrough, run as written: every `sh` block between its
// walkthrough markers, in order, in one bash, from a blank directory outside
// the repository, with only what the docs assume on PATH (pulumi, Pulumi YAML's
// host, Node.js >= 22) and TARBALL pointing at the plugin tarball. Pulumi's home
// is not `$HOME/.pulumi` (#41 item 5): nothing in the walkthrough may depend on
// where Pulumi keeps its plugins.
import { execFile } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, inject, it } from "vitest";
import { REPO_ROOT } from "../support/pulumi-env";
import { archiveName, hostPlatform } from "../../scripts/pack-plugin";
import { checksumsText } from "../../scripts/release";
import { PLUGIN_VERSION, pluginTarball, toolDir } from "./support";

const run = promisify(execFile);

/** The `sh` blocks between `<!-- marker -->` and `<!-- /marker -->`, in order. */
function shBlocks(markdown: string, marker: string): string[] {
  const start = markdown.indexOf(`<!-- ${marker} -->`);
  const end = markdown.indexOf(`<!-- /${marker} -->`);
  if (start < 0 || end < start) throw new Error(`docs/plugin.md has no ${marker} markers`);
  const blocks = [...markdown.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  if (blocks.length === 0) throw new Error(`the ${marker} section has no sh blocks`);
  return blocks;
}

/** The `sh` blocks of the walkthrough section, in order. */
function walkthroughScript(markdown: string): string {
  return shBlocks(markdown, "walkthrough").join("\n");
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

/** The one `sh` block of docs/plugin.md's verify-release section. */
function verifyReleaseBlock(markdown: string): string {
  const blocks = shBlocks(markdown, "verify-release");
  if (blocks.length !== 1) throw new Error(`the verify-release section has ${blocks.length} sh blocks, not one`);
  return blocks[0]!;
}

// Issue #39, item 8: an archive is installed only when SHA256SUMS (as `npm run
// release` writes it) lists its hash. Run as written, as a user pastes it: in a
// plain bash (no -e), so the block itself must stop at a mismatch.
describe("docs/plugin.md: verify a release archive before installing it", { timeout: 240_000 }, () => {
  const block = verifyReleaseBlock(readFileSync(path.join(REPO_ROOT, "docs/plugin.md"), "utf8"));
  const archive = archiveName(PLUGIN_VERSION, hostPlatform());

  /** A blank directory holding the release's archive (as given) and its SHA256SUMS; the block run there. */
  async function runBlock(label: string, tamper: boolean): Promise<{ code: number; out: string; installed: boolean }> {
    const here = path.join(dir, label);
    mkdirSync(here);
    copyFileSync(pluginTarball(), path.join(here, archive));
    // Another file of the release first, as in the real SHA256SUMS (it lists every platform's archive).
    writeFileSync(path.join(here, "pulumi_user_groups-0.2.0.tar.gz"), "sdist");
    writeFileSync(path.join(here, "SHA256SUMS"), checksumsText(here, ["pulumi_user_groups-0.2.0.tar.gz", archive]));
    rmSync(path.join(here, "pulumi_user_groups-0.2.0.tar.gz"));
    if (tamper) appendFileSync(path.join(here, archive), "\n# planted\n");
    const home = path.join(here, ".pulumi");
    const env: NodeJS.ProcessEnv = {
      HOME: here,
      PULUMI_HOME: home,
      PULUMI_SKIP_UPDATE_CHECK: "true",
      ARCHIVE: archive,
      PATH: [inject("pulumiBinDir"), "/usr/local/bin", "/usr/bin", "/bin"].join(path.delimiter),
    };
    const outcome = await run("bash", ["-c", block], { cwd: here, env, maxBuffer: 8 * 1024 * 1024 }).then(
      ({ stdout, stderr }) => ({ code: 0, out: `${stdout}\n${stderr}` }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, out: `${error.stdout ?? ""}\n${error.stderr ?? ""}` }),
    );
    const installed = existsSync(path.join(home, "plugins", `resource-user-groups-v${PLUGIN_VERSION}`, "pulumi-resource-user-groups"));
    return { ...outcome, installed };
  }

  it("installs the archive SHA256SUMS lists, from the files at hand (no download)", async () => {
    const { code, out, installed } = await runBlock("matching", false);
    expect(out).toContain(`${archive}: OK`);
    expect(code, out).toBe(0);
    expect(installed).toBe(true);
  });

  it("refuses an archive changed after the release (FAILED), and installs nothing", async () => {
    const { code, out, installed } = await runBlock("tampered", true);
    expect(out).toContain(`${archive}: FAILED`);
    expect(code).not.toBe(0);
    expect(installed).toBe(false);
  });

  it("is the block docs/security.md shows", () => {
    expect(readFileSync(path.join(REPO_ROOT, "docs/security.md"), "utf8")).toContain(`\`\`\`sh\n${block}\`\`\``);
  });
});
