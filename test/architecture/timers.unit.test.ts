// Every timer through the clock (issue #43 item 4; docs/architecture.md, "Time"):
// no source file of provider/ but provider/clock.ts calls setTimeout, setInterval,
// setImmediate or AbortSignal.timeout, or imports node:timers, itself. A wait
// goes through a Clock's sleep (`keepAlive: false` for one that must not hold
// the process up), so a test can run it on a fake clock. dependency-cruiser sees
// imports, not calls: this reads each file's syntax tree (comments and strings
// are not calls). A socket's or a server's own `.setTimeout(ms)` is an I/O
// option, not a timer, and is not counted.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "..", "..");
const THE_CLOCK = "provider/clock.ts";
const TIMER_CALLS = new Set(["setTimeout", "setInterval", "setImmediate"]);
const TIMER_MODULES = new Set(["timers", "node:timers", "timers/promises", "node:timers/promises"]);
const GLOBALS = new Set(["globalThis", "global", "window"]);

/**
 * Files another part of issue #43 moves (the "backends" work: each backend one adapter folder) whose timers move
 * onto the clock with them. An entry must still hold a direct timer: once it is mended it has to leave this list,
 * so the list only shrinks.
 */
const MOVED_ELSEWHERE: ReadonlySet<string> = new Set<string>([]);

/** Each direct timer of a TypeScript source, as `line: text`. */
function directTimers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isIdentifier(callee) && TIMER_CALLS.has(callee.text)) at(node, `${callee.text}(`);
      if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)) {
        const [object, name] = [callee.expression.text, callee.name.text];
        if (GLOBALS.has(object) && TIMER_CALLS.has(name)) at(node, `${object}.${name}(`);
        if (object === "AbortSignal" && name === "timeout") at(node, "AbortSignal.timeout(");
      }
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === "require")) {
        const [specifier] = node.arguments;
        if (specifier !== undefined && ts.isStringLiteral(specifier) && TIMER_MODULES.has(specifier.text)) at(node, `loads ${specifier.text}`);
      }
    }
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && TIMER_MODULES.has(node.moduleSpecifier.text)) at(node, `imports ${node.moduleSpecifier.text}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sources(rel);
    return /\.(ts|js|cjs|mjs)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [rel] : [];
  });
}

describe("every timer through the clock", () => {
  const files = sources("provider");
  const timers = new Map(files.map((file) => [file, directTimers(file, readFileSync(path.join(ROOT, file), "utf8"))]));

  it("sees provider/'s files, and the clock's own timer (else the rule below would hold of nothing)", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(timers.get(THE_CLOCK)).toEqual([expect.stringMatching(/imports node:timers\/promises/)]);
  });

  it("finds each kind of direct timer, and not a socket's timeout, a comment or a string", () => {
    const planted = [
      "setTimeout(() => {}, 5);",
      "const t = setInterval(tick, 1_000);",
      "globalThis.setImmediate(go);",
      "await fetch(url, { signal: AbortSignal.timeout(5_000) });",
      'import { setTimeout as wait } from "node:timers/promises";',
      'const timers = await import("timers");',
      "socket.setTimeout(1_000, () => done());",
      "// setTimeout(resolve, 5) in a comment",
      'const text = "setInterval(x)";',
    ].join("\n");
    expect(directTimers("planted.ts", planted)).toEqual([
      "1: setTimeout(",
      "2: setInterval(",
      "3: globalThis.setImmediate(",
      "4: AbortSignal.timeout(",
      "5: imports node:timers/promises",
      "6: loads timers",
    ]);
  });

  it(`no file of provider/ but ${THE_CLOCK} has a timer of its own`, () => {
    const direct = [...timers].filter(([file, found]) => file !== THE_CLOCK && found.length > 0).map(([file, found]) => `${file}: ${found.join("; ")}`);
    expect(direct.filter((entry) => !MOVED_ELSEWHERE.has(entry.split(":")[0]!))).toEqual([]);
    for (const file of MOVED_ELSEWHERE) expect(timers.get(file) ?? [], `${file} is mended: take it off MOVED_ELSEWHERE`).not.toEqual([]);
  });
});
