// The one error catalogue (provider/wire/error-codes.ts): docs/cli-json.md's tables
// are the catalogue, no more and no less (with the exit code a `--json` document
// carries each code with); every code a UserGroupsError is built with in the
// sources (a literal, or a parameter typed as a union of literals) is in it, found
// with the TypeScript checker; only the HTTP client's errors use a foreign code.
// The typecheck enforces the literals too: see the @ts-expect-error below.
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ERROR_CODE_LIST, ERROR_CODES, type ErrorCodeEntry, isErrorCode } from "../../provider/wire/error-codes";
import { UserGroupsError } from "../../provider/wire/errors";
import { SERVICE_ERROR_CODES } from "../../provider/wire/schemas";

const REPO_ROOT = path.resolve(__dirname, "../..");

/** The rows `| \`code\` | exit | ...` of docs/cli-json.md's "Errors" section. */
function documentedCodes(): Map<string, string> {
  const doc = readFileSync(path.join(REPO_ROOT, "docs/cli-json.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Errors"));
  const rows = new Map<string, string>();
  for (const line of section.split("\n")) {
    const row = /^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|/.exec(line);
    if (!row) continue;
    expect(rows.has(row[1]!), `${row[1]} documented twice`).toBe(false);
    rows.set(row[1]!, row[2]!);
  }
  return rows;
}

describe("the error catalogue", () => {
  it("has a meaning and a thrower for every code, each a snake_case name", () => {
    expect(ERROR_CODE_LIST.length).toBe(Object.keys(ERROR_CODES).length);
    for (const code of ERROR_CODE_LIST) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(ERROR_CODES[code].meaning.length, code).toBeGreaterThan(10);
      expect(ERROR_CODES[code].thrownBy.length, code).toBeGreaterThan(2);
      expect(isErrorCode(code)).toBe(true);
    }
    expect(isErrorCode("toString")).toBe(false);
    expect(isErrorCode("ECONNREFUSED")).toBe(false);
  });

  it("holds the contract's error codes (W3), which the fake server answers with and a UserGroupApiError carries", () => {
    for (const code of SERVICE_ERROR_CODES) expect(isErrorCode(code), code).toBe(true);
  });

  it("is what docs/cli-json.md documents: every code, no other, with its exit code", () => {
    const documented = documentedCodes();
    expect([...documented.keys()].sort()).toEqual([...ERROR_CODE_LIST].sort());
    for (const code of ERROR_CODE_LIST) {
      const entry: ErrorCodeEntry = ERROR_CODES[code];
      expect(documented.get(code), code).toBe(String(entry.exit ?? "—"));
    }
  });

  it("is the type of UserGroupsError's code: a code outside it does not compile", () => {
    // @ts-expect-error a code that is not in the catalogue
    const error = new UserGroupsError("not_a_catalogued_code", "x");
    expect(error.code).toBe("not_a_catalogued_code");
    expect(new UserGroupsError("run_lease_lost", "x").code).toBe("run_lease_lost");
  });
});

describe("the codes the sources build errors with", () => {
  const configFile = ts.readConfigFile(path.join(REPO_ROOT, "tsconfig.build.json"), (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, REPO_ROOT);
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const sources = program
    .getSourceFiles()
    .filter((file) => !file.isDeclarationFile && /^(provider|fake-server)\//.test(path.relative(REPO_ROOT, file.fileName)));

  function derivesFromUserGroupsError(type: ts.Type): boolean {
    if (type.getSymbol()?.getName() === "UserGroupsError") return true;
    return (type.isClassOrInterface() ? checker.getBaseTypes(type) : []).some(derivesFromUserGroupsError);
  }

  /** The string literals a code argument can be, or undefined when its type is not a union of literals. */
  function literalsOf(node: ts.Expression): string[] | undefined {
    const type = checker.getTypeAtLocation(node);
    const parts = type.isUnion() ? type.types : [type];
    if (!parts.every((part) => part.isStringLiteral())) return undefined;
    return parts.map((part) => (part as ts.StringLiteralType).value);
  }

  /** Every place a UserGroupsError (or a subclass's super) gets its code: [file:line, the code expression]. */
  function codeArguments(): Array<[string, ts.Expression]> {
    const found: Array<[string, ts.Expression]> = [];
    for (const file of sources) {
      const where = (node: ts.Node) => `${path.relative(REPO_ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.SuperKeyword && node.arguments[0]) {
          let owner: ts.Node | undefined = node.parent;
          while (owner && !ts.isClassLike(owner)) owner = owner.parent;
          const base = owner && ts.isClassLike(owner) ? checker.getTypeAtLocation(owner) : undefined;
          const bases = base?.isClassOrInterface() ? checker.getBaseTypes(base) : [];
          if (bases.some(derivesFromUserGroupsError)) found.push([where(node), node.arguments[0]]);
        }
        if (ts.isNewExpression(node) && node.arguments?.[0] && derivesFromUserGroupsError(checker.getTypeAtLocation(node))) {
          // A subclass's own constructor whose first parameter is the code (DeletionRefusedError, ApiError, ...).
          const signature = checker.getResolvedSignature(node);
          const first = signature?.getParameters()[0];
          if (first?.getName() === "code") found.push([where(node), node.arguments[0]]);
        }
        ts.forEachChild(node, visit);
      };
      visit(file);
    }
    return found;
  }

  it("are all in the catalogue; a code that is not a literal comes from the catalogue's own types", { timeout: 120_000 }, () => {
    const found = codeArguments();
    expect(found.length).toBeGreaterThan(60);
    const outside: string[] = [];
    const seen = new Set<string>();
    for (const [where, argument] of found) {
      const literals = literalsOf(argument);
      if (literals === undefined) {
        // Not literals: a parameter typed by the catalogue (ErrorCode, ServiceErrorCode), or the HTTP client's foreign code.
        const text = checker.typeToString(checker.getTypeAtLocation(argument));
        const ok = /^(ErrorCode|ServiceErrorCode)$/.test(text) || (where.startsWith("provider/client/errors.ts:") && /foreignErrorCode\(/.test(argument.getText()));
        if (!ok) outside.push(`${where}: ${argument.getText()} (${text})`);
        continue;
      }
      for (const code of literals) {
        seen.add(code);
        if (!isErrorCode(code)) outside.push(`${where}: ${code}`);
      }
    }
    expect(outside).toEqual([]);
    // The scan sees the classes it is meant to: a few from each layer.
    for (const code of ["usage", "run_lease_lost", "backend_not_found", "too_many_deletes", "missing_credentials", "invalid_tuning", "client_gone", "user_group_exists"]) {
      expect(seen.has(code), code).toBe(true);
    }
  });

  it("use a foreign code only in the HTTP client's errors", () => {
    const users = sources
      .filter((file) => /\bforeignErrorCode\(/.test(file.text))
      .map((file) => path.relative(REPO_ROOT, file.fileName))
      .filter((file) => file !== "provider/wire/error-codes.ts");
    expect(users).toEqual(["provider/client/errors.ts"]);
  });
});
