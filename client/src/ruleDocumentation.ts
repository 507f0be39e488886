// `graphlife.showRuleDocumentation`: a rule's page, opened inside the editor.
//
// The pages ship with graphlife (the server answers `graphlife/ruleDocumentation` from
// the rules' own documentation), so they open offline and always match the checker
// that made the diagnostic. They are virtual markdown documents shown in VS Code's
// markdown preview; hover links call the command with the rule code.
//
// In Chinese (graphlife.language, or VS Code's display language under "auto") the page
// is the rule's section of the packaged docs/rules.zh-CN.md; without that file or
// section, the server's page, then the packaged English docs/rules.md (also what an
// English page falls back to when no server runs).

import * as fs from "node:fs";

import * as vscode from "vscode";

import { currentLanguage } from "./currentLanguage";
import type { Language } from "./language";
import { ruleCodeOf, RULE_SCHEME, ruleUri } from "./ruleLinks";
import { rulePageMarkdown } from "./rulePages";

export interface RulePage {
  code: string;
  title: string;
  markdown: string;
}

/** Asks the running server for a page; undefined when no server runs or the code is unknown. */
export type RulePageSource = (code: string, language: Language) => Promise<RulePage | undefined>;

/** A packaged file's text; undefined when it is not in the .vsix (a build without the Chinese document). */
function readPackaged(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

export function registerRuleDocumentation(context: vscode.ExtensionContext, pages: RulePageSource): void {
  const provider: vscode.TextDocumentContentProvider = {
    provideTextDocumentContent: async (uri) => {
      const code = ruleCodeOf(uri.path);
      const language: Language = new URLSearchParams(uri.query).get("language") === "zh-cn" ? "zh-cn" : "en";
      const markdown = code
        ? await rulePageMarkdown(code, language, context.extensionPath, {
            readFile: readPackaged,
            serverPage: async () => (await pages(code, language))?.markdown,
          })
        : undefined;
      return (
        markdown ??
        `# ${code ?? uri.path}\n\n${vscode.l10n.t("graphlife could not load this rule's documentation: its language server is not running, or the code is unknown. `graphlife rules` in a terminal lists the rules.")}\n`
      );
    },
  };
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(RULE_SCHEME, provider),
    vscode.commands.registerCommand("graphlife.showRuleDocumentation", async (code?: unknown) => {
      let wanted = typeof code === "string" ? code : Array.isArray(code) && typeof code[0] === "string" ? code[0] : undefined;
      wanted ??= await vscode.window.showInputBox({
        title: vscode.l10n.t("graphlife rule"),
        prompt: vscode.l10n.t("A rule code, e.g. GL101"),
        validateInput: (v) => (ruleCodeOf(v) ? undefined : vscode.l10n.t("A code such as GL101")),
      });
      const normalized = wanted ? ruleCodeOf(wanted) : undefined;
      if (!normalized) return;
      // Beside the code: the user reads the page next to the line it explains.
      await vscode.commands.executeCommand("markdown.showPreviewToSide", vscode.Uri.parse(ruleUri(normalized, currentLanguage())));
    }),
  );
}

/** `graphlife.turnOffRule`: adds a code to `graphlife.ignore` (the workspace's settings when a folder is open). */
export async function turnOffRule(code: unknown): Promise<void> {
  const wanted = typeof code === "string" ? ruleCodeOf(code) : undefined;
  if (!wanted) return;
  const config = vscode.workspace.getConfiguration("graphlife");
  const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  const inspected = config.inspect<string[]>("ignore");
  const current = (target === vscode.ConfigurationTarget.Workspace ? inspected?.workspaceValue : inspected?.globalValue) ?? [];
  if (current.includes(wanted)) return;
  await config.update("ignore", [...current, wanted], target);
  const where = target === vscode.ConfigurationTarget.Workspace ? vscode.l10n.t("this workspace's settings") : vscode.l10n.t("your user settings");
  void vscode.window.showInformationMessage(vscode.l10n.t("graphlife: {0} is turned off in {1} (graphlife.ignore).", wanted, where));
}
