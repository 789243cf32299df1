// Issue #41 item 1: the Kubernetes manifests in the docs are real manifests.
// Every fenced YAML block of the user docs that has a `kind:` is validated
// offline against Kubernetes' own schemas (1.37, strict: an unknown field is an
// error) with kubernetes-validate (PyPI; its schemas ship inside the package),
// in a virtualenv scripts/ensure-kubernetes-validate makes once.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pulumi-env";

const IN_CI = process.env.CI === "true";
const HAVE_VENV = spawnSync("python3", ["-c", "import ensurepip, venv"], { stdio: "ignore" }).status === 0;
const INSTALL_HINT = "no python3 with its venv module; install it with `apt-get install python3-venv` (Debian/Ubuntu, as root)";
if (!HAVE_VENV && !IN_CI) console.warn(`manifest validation skipped: ${INSTALL_HINT}. With CI=true it fails instead.`);

interface Manifest {
  readonly place: string;
  readonly text: string;
}

/** Every ```yaml block with a top-level `kind:` in README.md and docs/*.md. */
function manifests(): Manifest[] {
  const docs = ["README.md", ...readdirSync(path.join(REPO_ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
  return docs.flatMap((doc) =>
    [...readFileSync(path.join(REPO_ROOT, doc), "utf8").matchAll(/^```ya?ml(?: \S+)?\n([\s\S]*?)^```$/gm)]
      .filter((match) => /^kind: /m.test(match[1]!))
      .map((match) => ({ place: `${doc}:${readFileSync(path.join(REPO_ROOT, doc), "utf8").slice(0, match.index).split("\n").length}`, text: match[1]! })),
  );
}

describe.skipIf(!HAVE_VENV && !IN_CI)("the Kubernetes manifests of the docs", () => {
  let validate = "";
  const dir = mkdtempSync(path.join(os.tmpdir(), "docs-manifests-"));
  beforeAll(() => {
    if (!HAVE_VENV) throw new Error(`CI=true: ${INSTALL_HINT}`);
    const stdout = execFileSync(path.join(REPO_ROOT, "scripts", "ensure-kubernetes-validate"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    validate = stdout.trim().split("\n").at(-1) ?? "";
  }, 600_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("are found: fleet-replicas.md's Deployment, with the service's base URL", () => {
    const found = manifests();
    expect(found.map((m) => m.place.split(":")[0])).toContain("docs/fleet-replicas.md");
    const deployment = found.find((m) => m.place.startsWith("docs/fleet-replicas.md"))!;
    expect(deployment.text).toMatch(/^apiVersion: apps\/v1\nkind: Deployment$/m);
    expect(deployment.text).toContain("name: USER_GROUPS_BASE_URL");
  });

  it("each passes Kubernetes' schemas, strictly; a manifest without its kind does not", () => {
    for (const manifest of manifests()) {
      const file = path.join(dir, "manifest.yaml");
      writeFileSync(file, manifest.text);
      const result = spawnSync(validate, ["--strict", "--kubernetes-version", "1.37.0", file], { encoding: "utf8" });
      expect(result.status, `${manifest.place}: ${result.stdout}${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/passed for resource/);
    }
    // The validator is real: what the docs showed before (no apiVersion, no kind) fails, and so does a misspelt field.
    const bare = path.join(dir, "bare.yaml");
    writeFileSync(bare, "spec:\n  terminationGracePeriodSeconds: 60\n  containers:\n    - name: onboarding\n");
    expect(spawnSync(validate, ["--strict", bare], { encoding: "utf8" }).status).not.toBe(0);
    const deployment = manifests().find((m) => m.place.startsWith("docs/fleet-replicas.md"))!;
    writeFileSync(bare, deployment.text.replace("terminationGracePeriodSeconds", "terminationGraceSeconds"));
    expect(spawnSync(validate, ["--strict", bare], { encoding: "utf8" }).status).not.toBe(0);
  });
});
