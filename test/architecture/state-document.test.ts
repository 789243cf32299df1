// Issue #39 item 2: one module exports and imports a stack's state
// (provider/automation/engine/state/state-document.ts), without `--show-secrets` and
// through a private file. The Automation API's exportStack() (`stack export
// --show-secrets`) and importStack() (a 0644 file in os.tmpdir()) must not come
// back anywhere in the product's sources, nor a command line of our own that
// exports or imports a state elsewhere, nor `--show-secrets` as an argument.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "..", "..");
const THE_MODULE = "provider/automation/engine/state/state-document.ts";
/** What ships or runs beside the engine: the product, the emulator, the language host. */
const PRODUCT_DIRS = ["provider", "fake-server", "language-host", "sdk"];

interface Rule {
  readonly name: string;
  readonly pattern: RegExp;
  /** The one file allowed to hold it, if any. */
  readonly allowedIn?: string;
}

const RULES: readonly Rule[] = [
  { name: "the Automation API's exportStack (it runs `stack export --show-secrets`)", pattern: /\bexportStack\b/ },
  { name: "the Automation API's importStack (it writes the state to a 0644 file in os.tmpdir())", pattern: /\bimportStack\b/ },
  { name: "--show-secrets as a command's argument", pattern: /["'`]--show-secrets["'`]/ },
  { name: "a `stack export` of our own", pattern: /["'`]stack["'`]\s*,\s*["'`]export["'`]/, allowedIn: THE_MODULE },
  { name: "a `stack import` of our own", pattern: /["'`]stack["'`]\s*,\s*["'`]import["'`]/, allowedIn: THE_MODULE },
];

/** The rules a file's text breaks, as `file:line: rule`. */
export function violationsIn(file: string, text: string): string[] {
  const found: string[] = [];
  const lines = text.split("\n");
  for (const rule of RULES) {
    if (rule.allowedIn === file) continue;
    lines.forEach((line, index) => {
      // The one module names what it replaces in its comments.
      if (file === THE_MODULE && /^\s*(\/\/|\*|\/\*\*)/.test(line)) return;
      if (rule.pattern.test(line)) found.push(`${file}:${index + 1}: ${rule.name}`);
    });
  }
  return found;
}

function sourcesUnder(dir: string): string[] {
  const files: string[] = [];
  const walk = (at: string) => {
    let entries;
    try {
      entries = readdirSync(path.join(ROOT, at), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) continue;
      const child = path.join(at, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (/\.(ts|mts|cts|js|cjs|mjs)$/.test(entry.name)) files.push(child);
    }
  };
  walk(dir);
  return files;
}

describe("the state's export and import", () => {
  it("happen in state-document.ts only, never with --show-secrets, never through the Automation API's exportStack/importStack", () => {
    const files = PRODUCT_DIRS.flatMap(sourcesUnder);
    expect(files).toContain(THE_MODULE);
    expect(files.length).toBeGreaterThan(100);
    const violations = files.flatMap((file) => violationsIn(file, readFileSync(path.join(ROOT, file), "utf8")));
    expect(violations).toEqual([]);
  });

  it("each rule fires on the code it forbids", () => {
    const file = "provider/automation/operations/recover.ts";
    expect(violationsIn(file, "const state = await prepared.stack.exportStack();")).toHaveLength(1);
    expect(violationsIn(file, "await stack.importStack(deployment);")).toHaveLength(1);
    expect(violationsIn(file, 'await workspace.exportStack("prod");')).toHaveLength(1);
    expect(violationsIn(file, 'run(["stack", "export", "--show-secrets"]);')).toHaveLength(2);
    expect(violationsIn(file, "run(['stack', 'import', '--file', file]);")).toHaveLength(1);
    expect(violationsIn(THE_MODULE, 'run(["stack", "export"]); run(["stack", "import", "--file", f]);')).toEqual([]);
    expect(violationsIn(THE_MODULE, 'run(["stack", "export", "--show-secrets"]);')).toHaveLength(1);
    // The CLI's own flag (it prints tokens to stdout with --json) is not an export.
    expect(violationsIn("provider/cli/args.ts", '  "show-secrets": { type: "boolean", default: false },')).toEqual([]);
  });
});
