// A rule's section of the packaged rule documentation (docs/rules.md, docs/rules.zh-CN.md).
// No `vscode` import (node tests).
//
// The documents are generated from the rules' own text; a rule is the block from its
// `## GL101 name` heading to the next `## ` heading. Lines are compared, not searched
// with a pattern: a heading is a line, and a code block's `#` comments never start with `## GL`.

import * as path from "node:path";

import type { Language } from "./language";

/** The packaged rule documents to try, in order, for `language` (English is always last). */
export function ruleDocumentFiles(extensionPath: string, language: Language): string[] {
  const english = path.join(extensionPath, "docs", "rules.md");
  return language === "zh-cn" ? [path.join(extensionPath, "docs", "rules.zh-CN.md"), english] : [english];
}

/** The section of `code` (its heading included) in a rules document, or undefined. */
export function ruleSection(markdown: string, code: string): string | undefined {
  const lines = markdown.split(/\r?\n/);
  // Which lines are headings: a `## ` line outside a fenced code block (a `## ` comment in an example is not one).
  let fenced = false;
  const heading = lines.map((line) => {
    if (line.trimStart().startsWith("```")) fenced = !fenced;
    return !fenced && line.startsWith("#");
  });
  const level2 = (i: number) => heading[i] && lines[i].startsWith("## ");
  const start = lines.findIndex((line, i) => level2(i) && line.slice(3).trim().split(/\s+/)[0] === code);
  if (start < 0) return undefined;
  let end = lines.findIndex((_, i) => i > start && level2(i));
  if (end < 0) end = lines.length;
  // The section's headings move one level up: on its own page the rule is the title.
  const section = lines.slice(start, end).map((line, i) => (heading[start + i] && line.startsWith("##") ? line.slice(1) : line));
  return section.join("\n").trimEnd() + "\n";
}

/** Where a rule page can come from: a packaged document's text (undefined when absent), the running server's page. */
export interface RulePageSources {
  readFile: (file: string) => string | undefined;
  serverPage: () => Promise<string | undefined>;
}

/**
 * A rule's page in `language`, from the first source that has it. Chinese: the packaged
 * docs/rules.zh-CN.md, then the server (which may answer in English when it is an older
 * graphlife), then docs/rules.md. English: the server (it always matches the checker that
 * made the diagnostic), then docs/rules.md (no server running).
 */
export async function rulePageMarkdown(code: string, language: Language, extensionPath: string, sources: RulePageSources): Promise<string | undefined> {
  const section = (files: string[]) => {
    for (const file of files) {
      const text = sources.readFile(file);
      const found = text === undefined ? undefined : ruleSection(text, code);
      if (found) return found;
    }
    return undefined;
  };
  const files = ruleDocumentFiles(extensionPath, language);
  const [first] = files;
  if (language === "zh-cn") {
    const chinese = section([first]);
    if (chinese) return chinese;
  }
  return (await sources.serverPage()) ?? section(files);
}
