// The translatable strings of client/src, read from the TypeScript syntax tree: the first
// argument of every `vscode.l10n.t(...)` call and of every call of the `t` that
// client/src/l10n.ts exports (under whatever name a module imports it).
import fs from "node:fs";
import path from "node:path";

import ts from "typescript";

export interface SourceString {
  message: string;
  /** Arguments after the message (the `{0}`, `{1}`... it fills). */
  argumentCount: number;
  where: string;
}

export interface Extraction {
  strings: SourceString[];
  /** Calls whose message is not a literal: no bundle can hold a translation for them. */
  dynamic: string[];
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

/** Local names of `t` imported from the l10n module (`import { t as tr } from "../l10n"`). */
function translatorNames(file: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!/(^|\/)l10n$/.test(statement.moduleSpecifier.text)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) {
      if ((element.propertyName ?? element.name).text === "t") names.add(element.name.text);
    }
  }
  return names;
}

/** `vscode.l10n.t(...)`. */
function isVscodeL10n(callee: ts.Expression): boolean {
  return (
    ts.isPropertyAccessExpression(callee) &&
    callee.name.text === "t" &&
    ts.isPropertyAccessExpression(callee.expression) &&
    callee.expression.name.text === "l10n" &&
    ts.isIdentifier(callee.expression.expression) &&
    callee.expression.expression.text === "vscode"
  );
}

export function extractStrings(srcRoot: string): Extraction {
  const strings: SourceString[] = [];
  const dynamic: string[] = [];
  for (const fileName of sourceFiles(srcRoot)) {
    const file = ts.createSourceFile(fileName, fs.readFileSync(fileName, "utf8"), ts.ScriptTarget.Latest, true);
    const local = translatorNames(file);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        const ours = isVscodeL10n(callee) || (ts.isIdentifier(callee) && local.has(callee.text));
        if (ours) {
          const where = `${path.relative(srcRoot, fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
          const first = node.arguments[0];
          // The one forwarding call in extension.ts hands `message` on; it is not a string of its own.
          if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) {
            strings.push({ message: first.text, argumentCount: node.arguments.length - 1, where });
          } else if (!(first && ts.isIdentifier(first) && first.text === "message")) {
            dynamic.push(where);
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return { strings, dynamic };
}

/** The placeholder numbers a message uses, sorted: "{1} of {0}" -> [0, 1]. */
export function placeholders(message: string): number[] {
  const found = new Set<number>();
  let at = message.indexOf("{");
  while (at >= 0) {
    const close = message.indexOf("}", at);
    if (close < 0) break;
    const inside = message.slice(at + 1, close);
    if (inside !== "" && [...inside].every((c) => c >= "0" && c <= "9")) found.add(Number(inside));
    at = message.indexOf("{", at + 1);
  }
  return [...found].sort((a, b) => a - b);
}
