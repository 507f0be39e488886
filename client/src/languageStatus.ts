// The server's state as a language status item: shown next to "Python" in the status bar
// on Python files and notebooks only (as ruff and Pylance show theirs), not on every file.
// It also says when graphlife is switched off for the file (`graphlife.enable: false`).

import * as vscode from "vscode";

import { type ServerState, statusLook } from "./statusLook";

/** Python files and the Python cells of notebooks. */
export const STATUS_SELECTOR: vscode.DocumentSelector = [
  { language: "python", scheme: "file" },
  { language: "python", scheme: "untitled" },
  { language: "python", notebookType: "jupyter-notebook" },
];

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private readonly subscriptions: vscode.Disposable[] = [];
  state: ServerState = "stopped";
  private detail: string | undefined;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem("graphlife.status", STATUS_SELECTOR);
    this.item.name = "graphlife";
    this.subscriptions.push(
      vscode.window.onDidChangeActiveTextEditor(() => this.render()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("graphlife.enable")) this.render();
      }),
    );
    this.set("starting");
  }

  set(state: ServerState, detail?: string): void {
    this.state = state;
    this.detail = detail;
    this.render();
  }

  private render(): void {
    const resource = vscode.window.activeTextEditor?.document.uri;
    const enabled = vscode.workspace.getConfiguration("graphlife", resource).get<boolean>("enable") !== false;
    const look = statusLook(this.state, enabled);
    this.item.text = look.text;
    this.item.detail = look.detail;
    this.item.severity = look.error ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    this.item.busy = this.state === "starting";
    this.item.command = { title: vscode.l10n.t("Show Logs"), command: "graphlife.showLogs", tooltip: this.detail ?? look.detail };
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    this.item.dispose();
  }
}
