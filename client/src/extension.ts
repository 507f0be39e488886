// graphlife's VS Code client: starts the language server and wires commands,
// settings, the language status item, rule pages and the debug inspector. All
// checking happens in Python.

import * as vscode from "vscode";

import { registerAutogradInspector } from "./debug";
import { parseInterpreterSetting } from "./interpreter";
import { selectInterpreter } from "./interpreterPicker";
import { StatusBar } from "./languageStatus";
import { isPythonExtensionInstalled, pythonApi } from "./pythonExtension";
import { registerRuleDocumentation, turnOffRule } from "./ruleDocumentation";
import { ServerManager } from "./server";
import { useTranslator } from "./l10n";
import { changeKind } from "./settings";

let manager: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  // The modules without a `vscode` import translate through this (l10n.ts).
  useTranslator((message, ...args) => vscode.l10n.t(message, ...args));
  const log = vscode.window.createOutputChannel("graphlife", { log: true });
  const status = new StatusBar();
  manager = new ServerManager(context, log, status);
  const server = manager;
  context.subscriptions.push(log, status, server);

  context.subscriptions.push(
    vscode.commands.registerCommand("graphlife.restart", () => server.restart(vscode.l10n.t("asked by the user"), true)),
    vscode.commands.registerCommand("graphlife.showLogs", () => log.show()),
    vscode.commands.registerCommand("graphlife.selectInterpreter", () => selectInterpreter(log)),
    vscode.commands.registerCommand("graphlife.turnOffRule", turnOffRule),
    // An event touching graphlife.interpreter is not a new interpreter yet (VS Code fires
    // them when it re-reads settings too): the manager resolves it again and compares.
    vscode.workspace.onDidChangeConfiguration((event) => {
      const kind = changeKind((section) => event.affectsConfiguration(section));
      if (kind.interpreter || kind.launch || kind.server) void server.configurationChanged((section) => event.affectsConfiguration(section));
    }),
    // Trust lifts the restriction on a workspace-level graphlife.interpreter.
    vscode.workspace.onDidGrantWorkspaceTrust(() => server.restart(vscode.l10n.t("the workspace is now trusted"))),
  );

  registerRuleDocumentation(context, (code, language) => server.ruleDocumentation(code, language));

  // The inspector is another module's job; its failure must not take the diagnostics down.
  try {
    registerAutogradInspector(context, log);
  } catch (error) {
    log.error(vscode.l10n.t("The Autograd debug view could not start: {0}", String(error)));
  }

  // Not awaited: activation must not wait for a Python process (or the Python extension) to come up.
  void server.start();
  void followPythonExtension(context, server, log);
}

function interpreterPinned(): boolean {
  const pinned = vscode.workspace.getConfiguration("graphlife").get<unknown>("interpreter");
  return parseInterpreterSetting(pinned).command.length > 0;
}

/**
 * A new active environment in the Python extension means a new server, unless
 * graphlife.interpreter pins one; so does the Python extension being installed or
 * removed while VS Code runs.
 */
async function followPythonExtension(context: vscode.ExtensionContext, server: ServerManager, log: vscode.LogOutputChannel): Promise<void> {
  let listener: vscode.Disposable | undefined;
  const subscribe = async () => {
    listener?.dispose();
    listener = undefined;
    const api = await pythonApi(log);
    // Restarts only when the interpreter resolved now differs (a pinned setting still wins).
    listener = api?.environments.onDidChangeActiveEnvironmentPath(() => {
      void server.interpreterInputsChanged(vscode.l10n.t("the Python extension's active environment changed"));
    });
  };
  let present = isPythonExtensionInstalled();
  context.subscriptions.push(
    { dispose: () => { listener?.dispose(); } },
    vscode.extensions.onDidChange(() => {
      if (isPythonExtensionInstalled() === present) return;
      present = !present;
      void subscribe();
      if (!interpreterPinned()) {
        void server.restart(present ? vscode.l10n.t("the Python extension was installed") : vscode.l10n.t("the Python extension was removed"));
      }
    }),
  );
  await subscribe();
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
