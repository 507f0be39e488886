// Which language graphlife speaks in this window. No `vscode` import (node tests).
//
// `graphlife.language` is "auto" (VS Code's display language, `vscode.env.language`),
// "en" or "zh-cn". VS Code's own strings and the extension's manifest always follow the
// display language; the choice made here is for what graphlife itself writes and picks:
// the rule documentation page, the debug probe's explanations (and, in the server, the
// diagnostics and hovers).

export type Language = "en" | "zh-cn";

/** Subtags of Chinese written in traditional characters: graphlife has no text for them. */
const TRADITIONAL = new Set(["tw", "hk", "mo", "hant"]);

/**
 * A VS Code locale ("zh-cn", "zh-CN", "zh-Hans", "zh-sg") as the language graphlife has for it;
 * English otherwise. The same reading as the server's (graphlife/i18n.py `normalize`), so the
 * rule page the client opens and the messages the server writes never disagree.
 */
export function languageOfLocale(locale: string | undefined): Language {
  const parts = (locale ?? "").trim().toLowerCase().split(".")[0].replace(/_/g, "-").split("-").filter(Boolean);
  if (parts[0] !== "zh") return "en";
  return parts.slice(1).some((part) => TRADITIONAL.has(part)) ? "en" : "zh-cn";
}

/** The setting's value (anything; a wrong one counts as "auto") with VS Code's display language. */
export function effectiveLanguage(setting: unknown, displayLanguage: string | undefined): Language {
  const chosen = typeof setting === "string" ? setting.trim().toLowerCase() : "auto";
  if (chosen === "en") return "en";
  if (chosen === "zh-cn") return "zh-cn";
  return languageOfLocale(displayLanguage);
}
