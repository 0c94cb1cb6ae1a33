// Outcomes of the rollout are discriminated results, never string sentinels: a function does not
// answer `"parked" | undefined`, nor take `EnvCall | "timeout"`. Checked with the compiler's own
// view of every function's types, so an inferred return type counts as much as a written one.
import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SCANNED = join(ROOT, "src/rollout");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/**
 * Names of string-literal unions that are data, not outcomes: values stored and shown as they
 * are (a state column, a token mode). Returning one is reading a field, not signalling a result.
 */
const DATA_ENUMS = new Set(["TokenMode", "EpisodeState", "GroupPhase"]);

function parsedConfig(): ts.ParsedCommandLine {
  const file = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile);
  return ts.parseJsonConfigFileContent(file.config, ts.sys, ROOT);
}

/** What is wrong with a type as a result or an argument, or null. */
function sentinel(
  checker: ts.TypeChecker,
  type: ts.Type,
  returned: boolean,
  declared: string | undefined,
): string | null {
  const members = type.isUnion() ? type.types : [type];
  const literals = members.filter((t) => t.isStringLiteral());
  if (literals.length === 0) return null;
  const others = members.filter(
    (t) => !t.isStringLiteral() && !(t.flags & ts.TypeFlags.BooleanLiteral),
  );
  if (others.length > 0)
    return `a string sentinel beside other results: ${checker.typeToString(type)}`;
  if (!returned) return null;
  const name = declared ?? type.aliasSymbol?.getName();
  if (name !== undefined && DATA_ENUMS.has(name)) return null;
  return `a bare string result: ${checker.typeToString(type)} (answer { kind: ... })`;
}

/** The type a promise resolves to, or the type itself. */
function awaited(checker: ts.TypeChecker, type: ts.Type): ts.Type {
  return checker.getAwaitedType(type) ?? type;
}

describe("rollout results", () => {
  it("are discriminated unions, never string sentinels", { timeout: 60_000 }, () => {
    const config = parsedConfig();
    const roots = files(SCANNED);
    const program = ts.createProgram(roots, config.options);
    const checker = program.getTypeChecker();
    const found: string[] = [];
    for (const path of roots) {
      const source = program.getSourceFile(path);
      if (source === undefined) throw new Error(`not compiled: ${path}`);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && !ts.isFunctionTypeNode(node)) {
          const signature = checker.getSignatureFromDeclaration(node);
          const where = `${relative(ROOT, path)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
          if (signature !== undefined) {
            const result = awaited(checker, checker.getReturnTypeOfSignature(signature));
            const declared = node.type?.getText(source).replace(/^Promise<(.*)>$/, "$1");
            const problem = sentinel(checker, result, true, declared);
            if (problem !== null) found.push(`${where} returns ${problem}`);
          }
          for (const parameter of node.parameters) {
            const type = checker.getTypeAtLocation(parameter);
            const problem = sentinel(checker, type, false, undefined);
            if (problem !== null) found.push(`${where} takes ${problem}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(found).toEqual([]);
  });
});
