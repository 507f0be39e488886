// Rule codes and the virtual documents of rule pages. No `vscode` import (node tests).

export const RULE_SCHEME = "graphlife-rule";

/** "gl101", "GL101", "/GL101.md" -> "GL101"; undefined for anything else. */
export function ruleCodeOf(text: string): string | undefined {
  const name = text.trim().replace(/^\//, "").replace(/\.md$/i, "").toUpperCase();
  return /^GL\d{3}$/.test(name) ? name : undefined;
}

/**
 * The virtual document of a rule's page (the `.md` makes VS Code treat it as markdown).
 * The language is part of the address, so a page opened after a language change is a new document.
 */
export function ruleUri(code: string, language: "en" | "zh-cn" = "en"): string {
  return `${RULE_SCHEME}:/${code}.md${language === "en" ? "" : `?language=${language}`}`;
}
