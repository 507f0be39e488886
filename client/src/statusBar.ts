// The status bar item: the server's state at a glance; clicking it opens the logs.

import * as vscode from "vscode";

export type ServerState = "starting" | "running" | "stopped" | "failed" | "no-interpreter";

const LOOK: Record<ServerState, { icon: string; label: string; error?: boolean }> = {
  starting: { icon: "$(sync~spin)", label: "starting" },
  running: { icon: "$(pulse)", label: "running" },
  stopped: { icon: "$(debug-stop)", label: "stopped" },
  failed: { icon: "$(error)", label: "failed", error: true },
  "no-interpreter": { icon: "$(warning)", label: "no Python 3.10+", error: true },
};

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  state: ServerState = "stopped";

  constructor() {
    this.item = vscode.window.createStatusBarItem("graphlife.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "graphlife";
    this.item.command = "graphlife.showLogs";
    this.set("starting");
    this.item.show();
  }

  set(state: ServerState, detail?: string): void {
    this.state = state;
    const look = LOOK[state];
    this.item.text = `${look.icon} graphlife`;
    const tooltip = new vscode.MarkdownString(`**graphlife** language server: ${look.label}`);
    if (detail) tooltip.appendMarkdown(`\n\n${detail}`);
    tooltip.appendMarkdown("\n\nClick to show the logs.");
    this.item.tooltip = tooltip;
    this.item.backgroundColor = look.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
