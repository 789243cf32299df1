// `npm run docs`: TypeDoc's API reference of the four entry points builds without a
// warning (typedoc.json treats warnings as errors: an exported name whose types are not
// exported, a broken link), and documents what a user reaches for. Built into a
// temporary directory: docs/api/ is the developer's, built on demand.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const REPO_ROOT = path.resolve(__dirname, "../..");
const run = promisify(execFile);

describe("the API reference", () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "ug-api-docs-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("builds from typedoc.json with no warning, one module per entry point", { timeout: 180_000 }, async () => {
    const { stdout, stderr } = await run(path.join(REPO_ROOT, "node_modules/.bin/typedoc"), ["--out", out], {
      cwd: REPO_ROOT,
      env: { ...process.env, PATH: [path.dirname(process.execPath), process.env.PATH ?? ""].join(path.delimiter) },
    });
    expect(`${stdout}${stderr}`).not.toMatch(/\[(warning|error)\]/);
    for (const page of ["pulumi-user-groups", "pulumi-user-groups_automation", "pulumi-user-groups_fake-server", "pulumi-user-groups_testing"]) {
      expect(existsSync(path.join(out, "modules", `${page}.html`)), page).toBe(true);
    }
    const fleet = readFileSync(path.join(out, "classes", "pulumi-user-groups_automation.UserGroupFleet.html"), "utf8");
    expect(fleet).toContain("ensureMany");
    expect(fleet).toContain("EnsuredGroup");
    // The zod schemas are internal: the reference shows the written-out types, never zod's.
    const pages = readdirSync(out, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".html"));
    expect(pages.length).toBeGreaterThan(50);
    const mentioningZod = pages.filter((page) => /userGroupInputsSchema|ZodObject|ZodType|z\.core/.test(readFileSync(path.join(out, page), "utf8")));
    expect(mentioningZod).toEqual([]);
  });
});
