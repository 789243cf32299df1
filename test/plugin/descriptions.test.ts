// The plugin's schema and the TypeScript JSDoc say the same about every
// property, because both come from logic/descriptions.ts: the schema is built
// from the table, and this test holds the JSDoc of UserGroupArgs and UserGroup's
// outputs (in the source and in the shipped .d.ts) to it, word for word.
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { INPUT_DESCRIPTIONS, OUTPUT_DESCRIPTIONS } from "../../provider/logic/descriptions";
import { INPUT_KEYS } from "../../provider/logic/inputs";
import { packageSchema, USER_GROUP_TOKEN } from "../../provider/plugin/schema";
import { REPO_ROOT } from "../support/pulumi-env";

/** JSDoc text of each member of the interface or class `name` in `file`. */
function memberDocs(file: string, name: string): Record<string, string> {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const docs: Record<string, string> = {};
  const visit = (node: ts.Node): void => {
    if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name?.text === name) {
      for (const member of node.members) {
        if (member.name === undefined || !ts.isIdentifier(member.name)) continue;
        const comment = ts.getJSDocCommentsAndTags(member).find(ts.isJSDoc)?.comment;
        if (typeof comment === "string") docs[member.name.text] = comment;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return docs;
}

const sources = [
  ["source", path.join(REPO_ROOT, "provider/resource/user-group.ts")],
  ["shipped .d.ts", path.join(REPO_ROOT, "dist/provider/resource/user-group.d.ts")],
] as const;

describe("one description table for the schema and the TypeScript JSDoc", () => {
  it.each(sources)("UserGroupArgs' JSDoc (%s) is the table's, for every input", (_label, file) => {
    const docs = memberDocs(file, "UserGroupArgs");
    expect(Object.keys(docs).sort()).toEqual([...INPUT_KEYS].sort());
    expect(docs).toEqual(INPUT_DESCRIPTIONS);
  });

  it.each(sources)("UserGroup's outputs' JSDoc (%s) is the table's", (_label, file) => {
    const docs = memberDocs(file, "UserGroup");
    const outputs = Object.fromEntries(Object.keys(OUTPUT_DESCRIPTIONS).map((key) => [key, docs[key]]));
    expect(outputs).toEqual(OUTPUT_DESCRIPTIONS);
  });

  it("the plugin's schema carries the same words, and every input", () => {
    const resource = (packageSchema("1.2.3").resources as Record<string, { inputProperties: Record<string, { description: string }>; properties: Record<string, { description: string; secret?: boolean }> }>)[USER_GROUP_TOKEN]!;
    const described = (props: Record<string, { description: string }>) => Object.fromEntries(Object.entries(props).map(([key, spec]) => [key, spec.description]));
    expect(described(resource.inputProperties)).toEqual(INPUT_DESCRIPTIONS);
    expect(described(resource.properties)).toEqual({ ...INPUT_DESCRIPTIONS, ...OUTPUT_DESCRIPTIONS });
    expect(resource.properties.token?.secret).toBe(true);
  });
});
