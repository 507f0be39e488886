// Maps the view model's rows (viewModel.ts) to VS Code tree items.

import * as vscode from "vscode";

import type { Row, RowIcon } from "./viewModel";

const ICONS: Record<RowIcon, [string, string?]> = {
  error: ["error", "errorForeground"],
  warning: ["warning", "list.warningForeground"],
  info: ["info", "notificationsInfoIcon.foreground"],
  tensor: ["symbol-variable"],
  leaf: ["symbol-constant"],
  container: ["symbol-array"],
  exception: ["bug", "errorForeground"],
  "saved-ok": ["pass", "testing.iconPassed"],
  "saved-modified": ["diff-modified", "errorForeground"],
  "saved-freed": ["trash", "disabledForeground"],
  "saved-hooked": ["link"],
  "prediction-ok": ["check", "testing.iconPassed"],
  note: ["circle-small"],
};

export class AutogradTreeProvider implements vscode.TreeDataProvider<Row> {
  private rows: Row[] = [];
  private readonly changed = new vscode.EventEmitter<Row | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  setRows(rows: Row[]): void {
    this.rows = rows;
    this.changed.fire(undefined);
  }

  getChildren(element?: Row): Row[] {
    return element ? element.children : this.rows;
  }

  getTreeItem(row: Row): vscode.TreeItem {
    const state = row.children.length === 0
      ? vscode.TreeItemCollapsibleState.None
      : row.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(row.label, state);
    item.id = row.id;
    item.description = row.description;
    if (row.tooltip) item.tooltip = new vscode.MarkdownString(row.tooltip);
    const [icon, color] = ICONS[row.icon];
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    item.contextValue = row.contextValue;
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
