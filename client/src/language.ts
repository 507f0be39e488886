// Which language graphlife speaks in this window. No `vscode` import (node tests).
//
// `graphlife.language` is "auto" (VS Code's display language, `vscode.env.language`),
// "en" or "zh-cn". VS Code's own strings and the extension's manifest always follow the
// display language; the choice made here is for what graphlife itself writes and picks:
// the rule documentation page, the debug probe's explanations (and, in the server, the
// diagnostics and hovers).

export type Language = "en" | "zh-cn";

/** A VS Code locale ("zh-cn", "zh-CN", "zh-Hans", "zh-sg") as the language graphlife has for it; English otherwise. */
export function languageOfLocale(locale: string | undefined): Language {
  const tag = (locale ?? "").trim().toLowerCase().replace(/_/g, "-");
  const [primary, ...rest] = tag.split("-");
  if (primary !== "zh") return "en";
  // Simplified Chinese: zh, zh-cn, zh-sg, zh-hans(-*); Traditional (zh-tw, zh-hk, zh-hant) is not written yet.
  if (rest.length === 0) return "zh-cn";
  return ["cn", "sg", "hans", "my"].includes(rest[0]) ? "zh-cn" : "en";
}

/** The setting's value (anything; a wrong one counts as "auto") with VS Code's display language. */
export function effectiveLanguage(setting: unknown, displayLanguage: string | undefined): Language {
  const chosen = typeof setting === "string" ? setting.trim().toLowerCase() : "auto";
  if (chosen === "en") return "en";
  if (chosen === "zh-cn") return "zh-cn";
  return languageOfLocale(displayLanguage);
}
