// The language graphlife writes in now, read from the editor (language.ts decides).

import * as vscode from "vscode";

import { effectiveLanguage, type Language } from "./language";

/** graphlife.language, or VS Code's display language (`vscode.env.language`) under "auto". */
export function currentLanguage(): Language {
  return effectiveLanguage(vscode.workspace.getConfiguration("graphlife").get("language"), vscode.env.language);
}
