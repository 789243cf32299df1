// docs/testing.md's tests for `node:test` and jest, each run as written in a user's
// project (one group, its token exported) that sits under this repository's .work/,
// so `pulumi-user-groups/testing` resolves as a user's install would (node_modules
// walked up to the self-linked package), against an emulator that createTestStack
// starts itself:
// - the node:test block by `node --test` (Node's own runner, TypeScript by type stripping);
// - the jest block by jest with ts-jest (type-checked against @types/jest), both from
//   the cached prefix scripts/ensure-jest makes (jest is not a dependency of this
//   package; this file ensures it when it starts, `npm test`'s pretest before that).
// - the vitest block by vitest (this repository's, as a user's devDependency would be).
// Needs the engine.
import { execFile, execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { fencedBlocks } from "../support/doc-blocks";
import { REPO_ROOT } from "../support/pulumi-env";

const run = promisify(execFile);
const doc = readFileSync(path.join(REPO_ROOT, "docs/testing.md"), "utf8");
const tsBlocks = fencedBlocks("docs/testing.md", doc).filter((b) => b.info === "ts");
const nodeTestBlock = tsBlocks.find((b) => b.text.includes('from "node:test"'));
const vitestBlock = tsBlocks.find((b) => b.text.includes('from "vitest"'));
const jestBlock = tsBlocks.find((b) => b.text.includes("await stack.dispose()") && !/from "(vitest|node:test)"/.test(b.text));

mkdirSync(path.join(REPO_ROOT, ".work"), { recursive: true });
const projects: string[] = [];
afterAll(() => {
  for (const project of projects) rmSync(project, { recursive: true, force: true });
});

/** jest's npm prefix (jest, ts-jest, @types/jest, typescript), made once by scripts/ensure-jest. */
let jestPrefix = "";
beforeAll(() => {
  const stdout = execFileSync(path.join(REPO_ROOT, "scripts", "ensure-jest"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  jestPrefix = stdout.trim().split("\n").at(-1) ?? "";
}, 600_000);

/** A user's Pulumi project under .work/: one group, its token exported, and `test` as tenant.test.ts. */
function userProject(name: string, test: string): string {
  const project = mkdtempSync(path.join(REPO_ROOT, ".work", `${name}-`));
  projects.push(project);
  writeFileSync(path.join(project, "Pulumi.yaml"), "name: tenant\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n");
  cpSync(path.join(REPO_ROOT, "examples/tested-stack/tsconfig.json"), path.join(project, "tsconfig.json"));
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "tenant", private: true, main: "index.ts" }));
  writeFileSync(
    path.join(project, "index.ts"),
    'import { UserGroup } from "pulumi-user-groups";\n\nexport const token = new UserGroup("tenant", { name: "Tenant", userGroupId: "tenant" }).token;\n',
  );
  writeFileSync(path.join(project, "tenant.test.ts"), `${test}\n`);
  return project;
}

/** Runs a test runner in the project with this suite's Node and the engine on PATH; what it printed. */
async function runIn(project: string, runner: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  // Not this suite's own vitest settings (worker ids, pool): the user's runner starts afresh.
  const outside = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  return await run(process.execPath, args, {
    cwd: project,
    env: {
      ...outside,
      PATH: [inject("pulumiBinDir"), path.dirname(process.execPath), process.env["PATH"] ?? ""].join(path.delimiter),
      PULUMI_HOME: path.join(project, ".pulumi-home"),
    },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`${runner} failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
  });
}

it("the node:test block of docs/testing.md passes with `node --test` in a user's project", { timeout: 300_000 }, async () => {
  expect(nodeTestBlock).toBeDefined();
  const project = userProject("node-test", nodeTestBlock!.text);
  const { stdout } = await runIn(project, "node --test", ["--test", "tenant.test.ts"]);
  expect(stdout).toMatch(/^\S* ?pass 1$/m);
  expect(stdout).toMatch(/^\S* ?fail 0$/m);
});

it("the vitest block of docs/testing.md (the first test) passes with vitest in a user's project", { timeout: 300_000 }, async () => {
  expect(vitestBlock).toBeDefined();
  const project = userProject("vitest", vitestBlock!.text);
  const vitest = path.join(REPO_ROOT, "node_modules", "vitest", "vitest.mjs");
  const reportFile = path.join(project, "vitest-report.json");
  await runIn(project, "vitest", [vitest, "run", "--root", project, "--reporter", "json", "--outputFile", reportFile, "--testTimeout", "120000"]);
  const report = JSON.parse(readFileSync(reportFile, "utf8")) as { numPassedTests: number; numFailedTests: number; numTotalTests: number; success: boolean };
  expect({ passed: report.numPassedTests, failed: report.numFailedTests, total: report.numTotalTests, success: report.success }).toEqual({ passed: 1, failed: 0, total: 1, success: true });
});

it("the jest block of docs/testing.md passes with jest (ts-jest) in a user's project", { timeout: 300_000 }, async () => {
  expect(jestBlock).toBeDefined();
  expect(jestBlock!.text).toMatch(/^test\(/m);
  const project = userProject("jest", jestBlock!.text);
  const modules = path.join(jestPrefix, "node_modules");
  // A user's jest config, as docs/testing.md gives it: ts-jest for .ts, Node's environment;
  // absolute paths into the cached prefix stand for the user's own node_modules. ts-jest
  // type-checks the block (a diagnostic fails the run) with the project's compiler options,
  // jest's types, and CommonJS modules (ts-jest's language service warns on node16).
  const { compilerOptions } = JSON.parse(readFileSync(path.join(project, "tsconfig.json"), "utf8")) as { compilerOptions: Record<string, unknown> };
  const config = {
    rootDir: project,
    roots: ["<rootDir>"],
    testMatch: ["<rootDir>/tenant.test.ts"],
    testEnvironment: "node",
    transform: {
      "^.+\\.ts$": [
        path.join(modules, "ts-jest"),
        { tsconfig: { ...compilerOptions, module: "commonjs", moduleResolution: "node10", typeRoots: [path.join(modules, "@types"), path.join(REPO_ROOT, "node_modules", "@types")], types: ["jest", "node"] } },
      ],
    },
    cacheDirectory: path.join(project, ".jest-cache"),
    watchman: false,
  };
  writeFileSync(path.join(project, "jest.config.json"), JSON.stringify(config, null, 2));
  const { stdout, stderr } = await runIn(project, "jest", [path.join(modules, "jest", "bin", "jest.js"), "--ci", "--config", "jest.config.json", "--json"]);
  const report = JSON.parse(stdout) as { numPassedTests: number; numFailedTests: number; numTotalTests: number; success: boolean };
  expect({ passed: report.numPassedTests, failed: report.numFailedTests, total: report.numTotalTests, success: report.success }).toEqual({ passed: 1, failed: 0, total: 1, success: true });
  expect(stderr).not.toMatch(/\((WARN|ERROR)\)/);
});
