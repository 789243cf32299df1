// The package's public types are written out (provider/wire/schemas.ts says why:
// its declarations must not mention zod). That each written-out type equals what
// its schema infers is a type test (declared-types.test-d.ts). Here: the schemas
// tagged @internal really are gone from the shipped declarations.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

describe("the shipped declarations", () => {
  const DIST = path.resolve(__dirname, "../../dist");

  function declarationFiles(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return declarationFiles(full);
      return entry.name.endsWith(".d.ts") ? [full] : [];
    });
  }

  /** Every .d.ts a program that imports the package's entry points loads, following relative imports. */
  function reachableDeclarations(entries: readonly string[]): Set<string> {
    const seen = new Set<string>();
    const queue = entries.map((entry) => path.join(DIST, entry));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const match of readFileSync(file, "utf8").matchAll(/(?:from|import\()\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, "");
        // A folder (`./rate-budget`, `./lease`) resolves to its index.d.ts, as TypeScript resolves it.
        queue.push(target.endsWith(".d.ts") ? target : existsSync(`${target}.d.ts`) ? `${target}.d.ts` : path.join(target, "index.d.ts"));
      }
    }
    return seen;
  }

  it("never mention zod in what a program loads from any entry point", () => {
    const reachable = reachableDeclarations([
      "provider/index.d.ts",
      "provider/automation/index.d.ts",
      "fake-server/index.d.ts",
      "provider/resource/runtime.d.ts",
    ]);
    expect(reachable.size).toBeGreaterThan(20);
    const mentioningZod = [...reachable].filter((file) => /from "zod"|import\("zod"\)/.test(readFileSync(file, "utf8")));
    expect(mentioningZod.map((file) => path.relative(DIST, file))).toEqual([]);
  });

  it("leave out the @internal schemas", () => {
    const schemas = readFileSync(path.join(DIST, "provider/wire/schemas.d.ts"), "utf8");
    expect(schemas).not.toContain("getUserRequestSchema");
    expect(schemas).toContain("export interface GetUserRequest");
    expect(declarationFiles(DIST).length).toBeGreaterThan(20);
  });
});
