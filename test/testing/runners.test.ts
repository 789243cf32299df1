// docs/testing.md's test for `node:test`, run as written: the block is written
// into a user's project (one group, its token exported) and run by `node --test`
// (Node's own runner, TypeScript by type stripping), against an emulator that
// createTestStack starts itself. The vitest block is examples/tested-stack's kind
// of test (test/examples/tested-stack.test.ts); jest is not installed here (the
// block for it is the same call, disposed in `finally`). Needs the engine.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, inject, it } from "vitest";
import { fencedBlocks } from "../support/doc-blocks";
import { REPO_ROOT } from "../support/pulumi-env";

const run = promisify(execFile);
const doc = readFileSync(path.join(REPO_ROOT, "docs/testing.md"), "utf8");
const nodeTestBlock = fencedBlocks("docs/testing.md", doc).find((b) => b.info === "ts" && b.text.includes('from "node:test"'));

mkdirSync(path.join(REPO_ROOT, ".work"), { recursive: true });
const project = mkdtempSync(path.join(REPO_ROOT, ".work", "node-test-"));
afterAll(() => rmSync(project, { recursive: true, force: true }));

it("the node:test block of docs/testing.md passes with `node --test` in a user's project", { timeout: 300_000 }, async () => {
  expect(nodeTestBlock).toBeDefined();
  writeFileSync(path.join(project, "Pulumi.yaml"), "name: tenant\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n");
  cpSync(path.join(REPO_ROOT, "examples/tested-stack/tsconfig.json"), path.join(project, "tsconfig.json"));
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "tenant", private: true, main: "index.ts" }));
  writeFileSync(
    path.join(project, "index.ts"),
    'import { UserGroup } from "pulumi-user-groups";\n\nexport const token = new UserGroup("tenant", { name: "Tenant", userGroupId: "tenant" }).token;\n',
  );
  writeFileSync(path.join(project, "tenant.test.ts"), `${nodeTestBlock!.text}\n`);
  const { stdout } = await run(process.execPath, ["--test", "tenant.test.ts"], {
    cwd: project,
    env: {
      ...process.env,
      PATH: [inject("pulumiBinDir"), path.dirname(process.execPath), process.env["PATH"] ?? ""].join(path.delimiter),
      PULUMI_HOME: path.join(project, ".pulumi-home"),
    },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`node --test failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
  });
  expect(stdout).toMatch(/^\S* ?pass 1$/m);
  expect(stdout).toMatch(/^\S* ?fail 0$/m);
});
